/**
 * The benchmarks (what `turnstream bench` runs) and the fault suite (`turnstream chaos`): the
 * one surface the CLI calls. Every benchmark is listed here by name; each module declares its
 * description, options and run (bench/options.ts says what they promise).
 */
import { invalidInput } from '../core/index.ts';
import { benchHelp, resolveOptions, splitBenchArgs, type BenchConfig, type BenchModule } from './options.ts';

/** Every benchmark, loaded on demand (each pulls in what it measures). */
export const BENCHES: Readonly<Record<string, () => Promise<BenchModule>>> = {
  cli: () => import('./cli.ts'),
  clients: () => import('./clients.ts'),
  gateway: () => import('./gateway.ts'),
  kstreams: () => import('./kstreams.ts'),
  model: () => import('./model.ts'),
  parallel: () => import('./parallel.ts'),
  pipeline: () => import('./pipeline.ts'),
  replay: () => import('./replay.ts'),
  sink: () => import('./sink.ts'),
  streams: () => import('./streams.ts'),
  trainer: () => import('./trainer.ts'),
  weights: () => import('./weights.ts'),
};

export const availableBenches = (): string[] => Object.keys(BENCHES).sort();

/** The module of one benchmark; an unknown name is an input error naming the known ones. */
export async function loadBench(name: string): Promise<BenchModule> {
  const load = Object.hasOwn(BENCHES, name) ? BENCHES[name] : undefined;
  if (!load) throw invalidInput(`unknown benchmark "${name}"; available: ${availableBenches().join(', ')}`, 'name');
  return load();
}

/** What `turnstream bench [NAME] [options] [--help]` prints and returns. */
export interface BenchInvocation {
  /** Text for stdout (help, the list) or the result object. */
  output: string | object;
  /** The process's exit code. */
  exitCode: number;
}

/**
 * Runs `turnstream bench` from its arguments: the list of benchmarks (no name), one benchmark's
 * help (`--help`), or the benchmark itself, its options checked before anything starts (an
 * unknown option or a bad value is one line, exit 2).
 */
export async function runBenchCommand(
  name: string | undefined,
  rest: string[],
  config: BenchConfig,
  progress: (line: string) => void,
): Promise<BenchInvocation> {
  const { options, help } = splitBenchArgs(rest);
  if (name === undefined) {
    const lines = ['Usage: turnstream bench NAME [options] [--json]', '', 'Benchmarks (bench NAME --help for the options of one):'];
    for (const b of availableBenches()) lines.push(`  ${b.padEnd(10)} ${(await loadBench(b)).description}`);
    return { output: `${lines.join('\n')}\n`, exitCode: help ? 0 : 2 };
  }
  const mod = await loadBench(name);
  if (help) return { output: benchHelp(name, mod.description, mod.options), exitCode: 0 };
  const resolved = resolveOptions(mod.options, options);
  return { output: await mod.run({ config, options: resolved, progress }), exitCode: 0 };
}

export { runChaos, type ChaosResult } from './chaos/run-chaos.ts';
export { chaosTable } from './chaos/chaos-table.ts';
export type { BenchArgs, BenchConfig, BenchModule, BenchOptions, BenchResult } from './options.ts';
