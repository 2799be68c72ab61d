/**
 * `turnstream eval --workers N`: the (persona, seed) runs shared out over N child processes of this
 * very command, one run per child (`--only NAME --seed K`), a new child as soon as one finishes;
 * their eval.json files are joined into one result. A child's logs go to this command's stderr.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Persona } from './persona.ts';
import { mergeResults, type EvalResult } from './run-eval.ts';

/** How the command started: what a worker runs again, with its own share of the runs. */
export interface EvalCommandLine {
  /** The Node binary (`process.execPath`). */
  execPath: string;
  /** The command's script (`process.argv[1]`). */
  script: string;
  /** The arguments after `script`, the command's name included (`process.argv.slice(2)`). */
  args: string[];
}

/** The flags each worker gets its own value of: the parent's are left out. */
const OWN_FLAGS = new Set(['--only', '--out', '--workers', '--seed', '--seeds']);

/** The parent's arguments without the flags a worker sets itself (nor `--json`). */
function sharedArgs(argv: readonly string[]): string[] {
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const name = a.split('=')[0];
    if (OWN_FLAGS.has(name)) {
      if (!a.includes('=')) i++;
      continue;
    }
    if (a === '--json') continue;
    args.push(a);
  }
  return args;
}

/** One run in a child; its eval.json, or why it failed. */
async function runChild(
  self: EvalCommandLine,
  args: string[],
  unit: { persona: string; seed: number },
  seeds: number,
  runOut: string,
): Promise<EvalResult | string> {
  // --json: the child's logs go to stderr (inherited here); its one-line result is not needed.
  const child = spawn(
    self.execPath,
    [
      self.script,
      ...args,
      '--json',
      '--only',
      unit.persona,
      '--seeds',
      String(seeds),
      '--seed',
      String(unit.seed),
      '--out',
      runOut,
      '--workers',
      '1',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) => child.once('exit', (c, s) => r([c, s])));
  if (code === 0) return JSON.parse(await readFile(join(runOut, 'eval.json'), 'utf8')) as EvalResult;
  return `${unit.persona} seed ${unit.seed} (${signal ? `killed by ${signal}` : `exit ${code}`})`;
}

/** Runs every (persona, seed) of `personas` × `seeds` in `n` children; the joined result, none when every run failed. */
export async function runInWorkers(
  self: EvalCommandLine,
  personas: Persona[],
  seeds: number,
  n: number,
  out: string,
): Promise<{ result?: EvalResult; failed: string[] }> {
  // Each run's report stays under <out>/runs, so a run that fails costs only itself.
  const dir = join(out, 'runs');
  const args = sharedArgs(self.args);
  const units = Array.from({ length: seeds }, (_, s) => personas.map((p) => ({ persona: p.name, seed: s + 1 }))).flat();
  const t0 = Date.now();
  const parts: EvalResult[] = [];
  const failed: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < units.length) {
      const u = units[next++];
      const res = await runChild(self, args, u, seeds, join(dir, `${u.persona}-s${u.seed}`));
      if (typeof res === 'string') failed.push(res);
      else parts.push(res);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, units.length) }, worker));
  if (parts.length === 0) return { failed };
  // The runs overlap: the eval's wall time is this command's, not the sum or the longest run.
  const result = { ...mergeResults(parts, personas), seconds: (Date.now() - t0) / 1000 };
  // A run that failed costs only itself: the report joins the others and names it.
  return { result: failed.length ? { ...result, failed_runs: failed } : result, failed };
}
