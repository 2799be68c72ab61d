/**
 * A gym run's files: `gym.json` (the result), `gym.csv` (held-out pass@1 per seed, step and
 * task), `gym.svg` and `gym.png` (the curve: the mean over seeds in bold, one thin line per seed)
 * and `replies.md` (the reported split's answers before and after: test, or dev in a `--dev-only` run).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lineChart, seedSeries, svgToPng } from '../../measure/index.ts';
import type { GymResult } from './run-gym.ts';

export function gymCsv(r: GymResult): string {
  const lines = ['seed,step,version,split,task,part,pass_at_1'];
  for (const run of r.runs) {
    for (const e of run.evals) {
      const at = `${run.seed},${e.step},${e.version},${e.split}`;
      lines.push(`${at},all,all,${e.passAt1}`);
      for (const [part, p] of Object.entries(e.parts)) lines.push(`${at},all,${part},${p}`);
      for (const [task, p] of Object.entries(e.perTask)) {
        lines.push(`${at},${task},all,${p}`);
        for (const [part, q] of Object.entries(e.perTaskParts[task] ?? {})) lines.push(`${at},${task},${part},${q}`);
      }
    }
  }
  return lines.join('\n') + '\n';
}

/** The dev curve (every few steps: one thin line per seed, the mean in bold) and the test split's mean before and after. */
export function gymSvg(r: GymResult): string {
  const dev = r.dev_split.curve;
  const xs = [...new Set([...dev.map((c) => c.step), ...r.test_split.curve.map((c) => c.step)])].sort((a, b) => a - b);
  const series = [
    ...seedSeries(
      r.runs.map((run) => ({
        seed: run.seed,
        points: run.evals.filter((e) => e.split === 'dev').map((e) => [e.step, e.passAt1] as [number, number]),
      })),
      { label: `dev, mean of ${r.seeds}`, points: dev.map((c) => [c.step, c.passAt1] as [number, number]) },
    ),
    {
      label: `test, mean of ${r.seeds}`,
      points: r.test_split.curve.map((c) => [c.step, c.passAt1] as [number, number]),
      color: '#c0392b',
      width: 3,
      dash: '8 4',
      ends: true,
    },
  ];
  const parts = Object.entries(r.test_split.parts)
    .map(([name, x]) => `${name} ${x.before.toFixed(2)} → ${x.after.toFixed(2)}`)
    .join(', ');
  return lineChart(
    `turnstream gym: ${r.suite} on ${r.model}`,
    [
      `test pass@1 ${r.before.toFixed(2)} → ${r.after.toFixed(2)} (${r.tasks.test.length} tasks × ${r.settings.testSamples} samples, p ${Number.isFinite(r.p_value) ? `= ${r.p_value.toPrecision(2)}` : 'n/a'})${parts ? `; ${parts}` : ''}`,
      `dev (${r.tasks.dev.length} tasks × ${r.settings.evalSamples}) every ${r.settings.evalEvery} steps; ${r.seeds} seeds, ${r.batch} tasks × ${r.n} rollouts a step`,
    ],
    'GRPO steps',
    xs,
    series,
    'pass@1',
  );
}

export function gymRepliesMarkdown(r: GymResult): string {
  const split = r.settings.devOnly ? 'dev' : 'test';
  const out = [`# ${r.suite}: ${split} answers before and after (${r.model})`, ''];
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
