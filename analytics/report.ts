/**
 * `turnstream report`: the funnel and the learning curve of the live pipeline or of one replay
 * (`--tag`), or two runs side by side (`--compare`), as text or JSON.
 */
import { overview, type Overview } from './overview.ts';
import { compareRuns, type RunComparison, type RunStats } from './queries/compare-runs.ts';
import type { TurnSource } from './queries/scope.ts';
import type { AnalyticsStore } from '../warehouse/index.ts';

const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number): string => (s.length >= n ? s : ' '.repeat(n - s.length) + s);
const fmt = (v: number | null, digits = 3): string => (v === null ? '—' : v.toFixed(digits));

/** A bar of `width` cells for value/max (eighth blocks for the fraction). */
export function bar(value: number, max: number, width: number): string {
  if (max <= 0 || value <= 0) return '';
  const cells = (value / max) * width;
  const full = Math.floor(cells);
  const eighths = Math.round((cells - full) * 8);
  return '█'.repeat(full) + (eighths > 0 ? '▏▎▍▌▋▊▉█'[eighths - 1] : '');
}

export function formatReport(o: Overview, width = 40): string {
  const lines: string[] = [];
  const f = o.funnel;
  if (o.tag) {
    lines.push(`Replay "${o.tag}" (pairs, judgements, samples and dead letters of this tag; turns and weights are shared)`);
    lines.push('');
  } else if (o.source === 'imported') {
    lines.push('Imported history (turnstream import): its turns and what was derived from them; live traffic is left out');
    lines.push('');
  }
  const stages: Array<[string, number]> = [
    ['turns', f.turns],
    ['main', f.main],
    ['pairs', f.pairs],
    ['judged', f.judged],
    ['samples', f.samples],
    ['trained', f.trained],
  ];
  lines.push('Funnel');
  for (const [name, n] of stages) {
    const share = f.turns > 0 ? `${((100 * n) / f.turns).toFixed(1)}%` : '';
    lines.push(`  ${pad(name, 8)} ${lpad(String(n), 8)} ${lpad(share, 6)}  ${bar(n, f.turns, width)}`);
  }
  lines.push(`  (trainer reports ${f.trained_reported} samples consumed)`);
  if (o.imported) {
    const i = o.imported;
    lines.push(
      `  imported history, not in these figures: ${i.turns} turns, ${i.main} main, ${i.pairs} pairs, ${i.judged} judged, ${i.samples} samples (report --source imported)`,
    );
  }
  lines.push('');
  lines.push('Learning curve: mean judge score per policy version (-1 … 1)');
  if (o.reward_by_version.length === 0) lines.push('  no judged turns yet');
  lines.push(`  ${pad('version', 8)} ${lpad('judged', 7)} ${lpad('score', 7)} ${lpad('reward', 7)} ${lpad('samples', 8)}`);
  for (const v of o.reward_by_version) {
    // Bars start at -1, so a score of -1 is empty and +1 is full width.
    const b = v.mean_score === null ? '' : bar(v.mean_score + 1, 2, width / 2);
    lines.push(
      `  ${pad(`v${v.policy_version}`, 8)} ${lpad(String(v.judged), 7)} ${lpad(fmt(v.mean_score), 7)} ${lpad(fmt(v.mean_reward), 7)} ${lpad(String(v.samples), 8)}  ${b}`,
    );
  }
  if (o.judges.length > 0) {
    lines.push('');
    lines.push('Judges');
    for (const j of o.judges) {
      lines.push(
        `  ${pad(j.judge_id, 16)} judgements ${j.judgements}  agreement ${fmt(j.agreement, 2)}  vote failures ${fmt(j.failure_rate, 2)}  p90 vote ${fmt(j.vote_latency_ms_p90, 0)} ms`,
      );
    }
  }
  const all = o.latency.find((l) => l.turn_type === 'ALL');
  if (all) {
    lines.push('');
    lines.push(
      `Latency (${o.source === 'imported' ? 'imported turns, as recorded' : 'live turns'}): p50 ${fmt(all.p50, 0)} ms  p90 ${fmt(all.p90, 0)} ms  p99 ${fmt(all.p99, 0)} ms`,
    );
  }
  if (o.dlq.length > 0) {
    lines.push('');
    lines.push('Dead letters');
    for (const d of o.dlq)
      lines.push(`  ${pad(d.stage, 18)} ${pad(d.code, 22)} ${lpad(String(d.count), 6)}  ${d.last_message.slice(0, 60)}`);
  }
  return lines.join('\n');
}

const runName = (tag: string): string => (tag === '' ? 'live' : tag);

/** Two runs side by side: counts, score distribution and agreement on the turns both judged. */
export function formatComparison(c: RunComparison): string {
  const share = (n: number, of: number): string => (of > 0 ? `${((100 * n) / of).toFixed(1)}%` : '—');
  const rows: Array<[string, (r: RunStats) => string]> = [
    ['pairs', (r) => String(r.pairs)],
    ['judged', (r) => String(r.judged)],
    ['judgements', (r) => String(r.judgements)],
    ['samples', (r) => String(r.samples)],
    ['score +1', (r) => `${r.positive} (${share(r.positive, r.judgements)})`],
    ['score 0', (r) => `${r.neutral} (${share(r.neutral, r.judgements)})`],
    ['score -1', (r) => `${r.negative} (${share(r.negative, r.judgements)})`],
    ['mean score', (r) => fmt(r.mean_score)],
    ['mean reward', (r) => fmt(r.mean_reward)],
    ['judges', (r) => r.judge_ids.join(',') || '—'],
  ];
  const w = Math.max(16, runName(c.a.tag).length + 2, runName(c.b.tag).length + 2);
  const lines = [
    `Comparison: ${runName(c.a.tag)} vs ${runName(c.b.tag)}`,
    `  ${pad('', 12)} ${lpad(runName(c.a.tag), w)} ${lpad(runName(c.b.tag), w)}`,
  ];
  for (const [name, get] of rows) lines.push(`  ${pad(name, 12)} ${lpad(get(c.a), w)} ${lpad(get(c.b), w)}`);
  lines.push('');
  lines.push(
    `  judged in both: ${c.both_judged}, same score: ${c.same_score}${c.agreement === null ? '' : ` (agreement ${fmt(c.agreement, 3)})`}`,
  );
  return lines.join('\n');
}

export interface ReportOptions {
  /** Replay tag to report on; '' = the live pipeline. @default '' */
  tag?: string;
  /**
   * Another run's tag ('' = the live pipeline): print `tag` vs this run instead of the overview,
   * so `{ compare: 'x' }` is live vs replay x and `{ tag: 'x', compare: 'y' }` replay x vs y.
   * @default undefined (no comparison)
   */
  compare?: string;
  /** Without a tag: live traffic, or imported history. @default 'live' */
  source?: TurnSource;
  /** One JSON object instead of text. @default false */
  json?: boolean;
  /** Bar width in cells. @default 40 */
  width?: number;
}

/**
 * The report as printed: the overview of one run (`tag`), or with `compare` the comparison of
 * `tag` and `compare`. The store's tables must exist (run `migrate` first).
 */
export async function buildReport(store: AnalyticsStore, o: ReportOptions = {}): Promise<string> {
  const tag = o.tag ?? '';
  if (o.compare !== undefined) {
    const c = await compareRuns(store, { a: tag, b: o.compare });
    return o.json ? JSON.stringify(c) : formatComparison(c);
  }
  const ov = await overview(store, { tag, source: o.source });
  return o.json ? JSON.stringify(ov) : formatReport(ov, o.width);
}
