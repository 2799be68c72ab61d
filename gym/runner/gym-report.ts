/**
 * A gym run's files: `gym.json` (the result), `gym.csv` (held-out pass@1 per seed, step and
 * task), `gym.svg` and `gym.png` (the curve: the mean over seeds in bold, one thin line per seed)
 * and `replies.md` (held-out answers before and after).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lineChart, seedSeries, svgToPng } from '../../eval/index.ts';
import type { GymResult } from './run-gym.ts';

export function gymCsv(r: GymResult): string {
  const lines = ['seed,step,version,task,pass_at_1'];
  for (const run of r.runs) {
    for (const e of run.evals) {
      lines.push(`${run.seed},${e.step},${e.version},all,${e.passAt1}`);
      for (const [task, p] of Object.entries(e.perTask)) lines.push(`${run.seed},${e.step},${e.version},${task},${p}`);
    }
  }
  return lines.join('\n') + '\n';
}

export function gymSvg(r: GymResult): string {
  const xs = r.curve.map((c) => c.step);
  const series = seedSeries(
    r.runs.map((run) => ({ seed: run.seed, points: run.evals.map((e) => [e.step, e.passAt1] as [number, number]) })),
    { label: `mean of ${r.seeds}`, points: r.curve.map((c) => [c.step, c.passAt1] as [number, number]) },
  );
  return lineChart(
    `turnstream gym: ${r.suite} on ${r.model}`,
    [
      `held-out pass@1 (${r.tasks.eval.length} tasks × ${r.settings.evalSamples} samples), ${r.seeds} seeds, ${r.batch} tasks × ${r.n} rollouts a step, p ${Number.isFinite(r.p_value) ? `= ${r.p_value.toPrecision(2)}` : 'n/a'}`,
    ],
    'GRPO steps',
    xs,
    series,
    'held-out pass@1',
  );
}

export function gymRepliesMarkdown(r: GymResult): string {
  const out = [`# ${r.suite}: held-out answers before and after (${r.model})`, ''];
  for (const run of r.runs) {
    out.push(`## seed ${run.seed}`, '');
    for (const [label, list] of [
      ['before', run.replies.before],
      ['after', run.replies.after],
    ] as const) {
      out.push(`### ${label}`, '');
      for (const x of list) out.push(`- **${x.task}** (${x.passed ? 'pass' : 'fail'}): ${JSON.stringify((x.answer ?? '').slice(0, 300))}`);
      out.push('');
    }
  }
  return out.join('\n');
}

/** Writes the run's files into `dir`; returns their paths. */
export async function writeGymReports(r: GymResult, dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const svg = gymSvg(r);
  const files: Array<[string, string | Buffer]> = [
    ['gym.json', JSON.stringify(r, null, 2) + '\n'],
    ['gym.csv', gymCsv(r)],
    ['gym.svg', svg],
    ['replies.md', gymRepliesMarkdown(r)],
  ];
  const png = await svgToPng(svg);
  if (png) files.push(['gym.png', png]);
  for (const [name, body] of files) await writeFile(join(dir, name), body);
  return files.map(([name]) => join(dir, name));
}
