/**
 * The evaluation's outputs: a CSV (one row per run × scored version), the JSON result, and
 * learning curves as hand-written SVG (the overall one and one per persona: held-out satisfaction,
 * mean across seeds, against interactions), rendered to PNG by @resvg/resvg-js (prebuilt, no
 * native build) where it loads.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CHART_COLORS, lineChart, mean, pngRendererError, seedSeries, svgToPng, type Series } from '../measure/index.ts';
import { peakOf, type EvalResult } from './run-eval.ts';

/** What the reports read of a result. */
export type ReportInput = Pick<
  EvalResult,
  | 'personas'
  | 'interactions'
  | 'seeds'
  | 'method'
  | 'mode'
  | 'before'
  | 'after'
  | 'per_version'
  | 'answered'
  | 'statistic'
  | 'batchSize'
  | 'seconds'
  | 'runs'
>;

const csvCell = (v: string | number): string => {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export const CSV_HEADER = 'persona,preference,seed,version,interactions,satisfaction,answered,train_satisfaction';

/** One row per run (persona × seed) and scored version. */
export function toCsv(r: Pick<ReportInput, 'runs'>): string {
  const lines = [CSV_HEADER];
  for (const run of r.runs) {
    for (const s of run.scores)
      lines.push(
        [
          run.persona,
          run.preference,
          run.seed,
          s.version,
          s.interactions,
          s.satisfaction.toFixed(4),
          s.answered.toFixed(4),
          run.trainSatisfaction.toFixed(4),
        ]
          .map(csvCell)
          .join(','),
      );
  }
  return lines.join('\n') + '\n';
}

export interface PersonaSummary {
  preference: string;
  /** Mean over seeds of the held-out satisfaction of version 0… */
  before: number;
  /** …and of the last version. */
  after: number;
  /** Mean share of held-out replies that answer the prompt, version 0 and last. */
  answered_before: number;
  answered_after: number;
  seeds: number;
}

/** Before/after per persona, means across its seeds. */
export function perPersona(r: Pick<ReportInput, 'runs'>): Record<string, PersonaSummary> {
  const out: Record<string, PersonaSummary> = {};
  for (const name of [...new Set(r.runs.map((x) => x.persona))]) {
    const runs = r.runs.filter((x) => x.persona === name && x.scores.length > 0);
    out[name] = {
      preference: runs[0]?.preference ?? '',
      before: mean(runs.map((x) => x.scores[0].satisfaction)),
      after: mean(runs.map((x) => x.scores[x.scores.length - 1].satisfaction)),
      answered_before: mean(runs.map((x) => x.scores[0].answered)),
      answered_after: mean(runs.map((x) => x.scores[x.scores.length - 1].answered)),
      seeds: runs.length,
    };
  }
  return out;
}

/** Whether a run held what it learned: its last score against its best. */
export interface RunStability {
  persona: string;
  seed: number;
  /** The peak and the last score the verdict reads: measured again where the run was (`measuredAgain`), else the curve's. */
  peak: number;
  final: number;
  /**
   * One eval step's noise at the peak: the standard error of a share of the n held-out replies an
   * eval step scores, with Agresti–Coull's two successes and two failures added (so a peak of 1
   * still has a width: about one reply in n).
   */
  noise: number;
  /** The last score is more than `noise` below the peak. */
  endsBelowPeak: boolean;
  /** The curve's own peak and last score, and whether they alone would count the run. */
  curve: { peak: number; final: number; endsBelowPeak: boolean };
  /** Held-out replies each of the peak and the last version was measured again on (0: read off the curve). */
  measuredAgain: number;
}

const stepNoise = (share: number, n: number): number => {
  const p = (share * n + 2) / (n + 4);
  return Math.sqrt((p * (1 - p)) / (n + 4));
};

/**
 * Each run's peak, last score and noise (see {@link RunStability}); n = the replies of the curve
 * peak's score (12 when unknown). The curve's peak is the highest of several noisy scores and reads
 * high, so where a run measured its peak and last version again on fresh draws
 * (`RunResult.remeasured`), the verdict reads those.
 */
export function stability(r: Pick<ReportInput, 'runs'>): { runs: RunStability[]; endsBelowPeak: number; curveEndsBelowPeak: number } {
  const runs = r.runs
    .filter((x) => x.scores.length > 0)
    .map((x): RunStability => {
      const best = peakOf(x.scores);
      const last = x.scores[x.scores.length - 1].satisfaction;
      const n = best.replies ?? 12;
      const curveNoise = stepNoise(best.satisfaction, n);
      const curve = { peak: best.satisfaction, final: last, endsBelowPeak: last < best.satisfaction - curveNoise - 1e-12 };
      const again = x.remeasured;
      const peak = again ? again.peak.satisfaction : curve.peak;
      const final = again ? again.last.satisfaction : curve.final;
      const noise = again ? stepNoise(peak, n) : curveNoise;
      return {
        persona: x.persona,
        seed: x.seed,
        peak,
        final,
        noise,
        endsBelowPeak: final < peak - noise - 1e-12,
        curve,
        measuredAgain: again?.peak.replies ?? 0,
      };
    });
  return {
    runs,
    endsBelowPeak: runs.filter((x) => x.endsBelowPeak).length,
    curveEndsBelowPeak: runs.filter((x) => x.curve.endsBelowPeak).length,
  };
}

/** The JSON result: the whole result plus the per-persona summary, the p-value and the wall time. */
export type EvalJson<R extends ReportInput = ReportInput> = R & {
  per_persona: Record<string, PersonaSummary>;
  p_value: number;
  /** Runs that ended more than one eval step's noise below their own peak. */
  stability: ReturnType<typeof stability>;
  wall_s: number;
  /** When the report was written (ms since the epoch). */
  finished_at: number;
};

export function toResultJson<R extends ReportInput>(r: R, now = Date.now()): EvalJson<R> {
  return { ...r, per_persona: perPersona(r), p_value: r.statistic.p, stability: stability(r), wall_s: r.seconds, finished_at: now };
}

/** Every run's held-out replies, before and after, and its interactions, as a page to read: a score can be met by replies no user would want. */
export function toRepliesMarkdown(r: Pick<ReportInput, 'runs'>): string {
  const out = ['# Replies of each run: held-out, at its first and last version, and its interactions', ''];
  const quote = (t: string): string => JSON.stringify(t);
  for (const run of r.runs) {
    if (!run.replies) continue;
    const first = run.scores[0];
    const last = run.scores[run.scores.length - 1];
    out.push(`## ${run.persona}, seed ${run.seed} (${run.preference})`, '');
    for (const [label, list, s] of [
      ['before', run.replies.first, first],
      ['after', run.replies.last, last],
    ] as const) {
      out.push(
        `${label}: version ${s?.version ?? '?'}, satisfaction ${s ? s.satisfaction.toFixed(2) : '?'}, answered ${s ? s.answered.toFixed(2) : '?'}`,
        '',
      );
      // ✓ satisfied, ✗ an answer that misses the preference, ∅ no answer at all.
      for (const x of list) out.push(`- ${x.satisfied ? '✓' : x.answered ? '✗' : '∅'} **${x.prompt}** → ${quote(x.text)}`);
      out.push('');
    }
    if (run.talk?.length) {
      out.push('interactions (trained on):', '');
      for (const [i, x] of run.talk.entries()) {
        out.push(`${i + 1}. v${x.version} ${x.satisfied ? '✓' : '✗'} **${x.prompt}** → ${quote(x.reply)} — ${quote(x.reaction)}`);
      }
      out.push('');
    }
  }
  return out.join('\n');
}

const fmtP = (p: number): string => (!Number.isFinite(p) ? 'n/a' : `= ${p.toPrecision(2)}`);

/** The overall curve: the mean over personas and seeds in bold, one thin line per persona. */
export function toSvg(r: ReportInput): string {
  const names = [...new Set(r.runs.map((x) => x.persona))];
  const series: Series[] = names.map((p, i) => ({
    label: p,
    points: r.per_version.filter((v) => p in v.byPersona).map((v) => [v.interactions, v.byPersona[p]] as [number, number]),
    color: CHART_COLORS[i % CHART_COLORS.length],
    width: 1.5,
  }));
  series.push({ label: 'mean', points: r.per_version.map((v) => [v.interactions, v.satisfaction]), color: 'black', width: 3, ends: true });
  return lineChart(
    `Held-out satisfaction, ${r.personas} personas × ${r.seeds} seeds (${r.method}, ${r.mode})`,
    [`before ${r.before.toFixed(2)} → after ${r.after.toFixed(2)}; ${r.statistic.test} p ${fmtP(r.statistic.p)} (n = ${r.statistic.n})`],
    `interactions per persona (a weight version every ${r.batchSize})`,
    r.per_version.map((v) => v.interactions),
    series,
  );
}

/** One persona's curve: each seed as a thin dashed line, their mean in bold. */
export function toPersonaSvg(r: ReportInput, persona: string): string {
  const runs = r.runs.filter((x) => x.persona === persona).sort((a, b) => a.seed - b.seed);
  const summary = perPersona({ runs })[persona];
  const series = seedSeries(
    runs.map((run) => ({ seed: run.seed, points: run.scores.map((s) => [s.interactions, s.satisfaction] as [number, number]) })),
    {
      label: 'mean',
      points: r.per_version.filter((v) => persona in v.byPersona).map((v) => [v.interactions, v.byPersona[persona]] as [number, number]),
    },
  );
  return lineChart(
    persona,
    [
      summary?.preference ?? '',
      `before ${summary ? summary.before.toFixed(2) : '—'} → after ${summary ? summary.after.toFixed(2) : '—'}, mean of ${runs.length} seed${runs.length === 1 ? '' : 's'} (${r.method}, ${r.mode})`,
    ],
    `interactions (a weight version every ${r.batchSize})`,
    runs.flatMap((run) => run.scores.map((s) => s.interactions)),
    series,
  );
}

export interface WrittenReports {
  csv: string;
  json: string;
  /** The overall curve first, then one per persona. */
  svg: string[];
  /** The same curves as PNG; empty when no renderer loaded… */
  png: string[];
  /** …and then why. */
  pngSkipped: string | null;
}

/** A persona name as a file name (names are validated to [A-Za-z0-9_-], but runs may come from elsewhere). */
const fileName = (name: string): string => name.replace(/[^A-Za-z0-9_-]/g, '_');

/**
 * Writes `eval.csv`, `eval.json`, `eval.svg` and `curves/<persona>.svg` (and `.png` beside each
 * SVG where a renderer loads) into `dir`. The JSON is `toResultJson(result)`.
 */
export interface WriteReportsOptions {
  /** Render each SVG to PNG as well (where @resvg/resvg-js loads). @default true */
  png?: boolean;
}

export async function writeReports(r: ReportInput, dir: string, options: WriteReportsOptions = {}): Promise<WrittenReports> {
  await mkdir(join(dir, 'curves'), { recursive: true });
  const written: WrittenReports = { csv: join(dir, 'eval.csv'), json: join(dir, 'eval.json'), svg: [], png: [], pngSkipped: null };
  await writeFile(written.csv, toCsv(r));
  await writeFile(written.json, JSON.stringify(toResultJson(r), null, 2) + '\n');
  await writeFile(join(dir, 'replies.md'), toRepliesMarkdown(r));
  const charts: Array<[string, string]> = [[join(dir, 'eval'), toSvg(r)]];
  for (const p of [...new Set(r.runs.map((x) => x.persona))]) charts.push([join(dir, 'curves', fileName(p)), toPersonaSvg(r, p)]);
  for (const [base, svg] of charts) {
    await writeFile(`${base}.svg`, svg);
    written.svg.push(`${base}.svg`);
    const png = options.png === false ? null : await svgToPng(svg);
    if (png) {
      await writeFile(`${base}.png`, png);
      written.png.push(`${base}.png`);
    }
  }
  written.pngSkipped = options.png === false ? 'not asked for' : pngRendererError();
  return written;
}
