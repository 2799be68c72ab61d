/**
 * `turnstream bench <name> [--json] [options…]`: runs `bench/<name>.ts`, which exports
 * `run(args: BenchArgs): Promise<object>` and measures against a baseline in the same run.
 * Helper modules in bench/ that export no `run` are not benchmarks and are not listed. What a
 * benchmark declares (description, options, baseline and ratio, cleanup): bench/options.ts.
 * `bench NAME --help` lists its options; an unknown option is an error. Prints the result as one
 * JSON object (`--json`) or as indented JSON for people.
 */
import type { Command } from 'commander';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchHelp, resolveOptions, type BenchOptions } from '../../bench/options.ts';
import { invalidInput } from '../../core/errors.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';

const BENCH_DIR = fileURLToPath(new URL('../../bench/', import.meta.url));

/** What every benchmark receives. */
export interface BenchArgs {
  config: TurnstreamConfig;
  /** `--key value` options after the name, as strings: checked and with defaults when the bench declares `options`. */
  options: Record<string, string>;
  /** Progress lines (stderr), so stdout stays one JSON object. */
  progress: (line: string) => void;
}

export function availableBenches(): string[] {
  if (!existsSync(BENCH_DIR)) return [];
  return readdirSync(BENCH_DIR)
    .filter((f) => /^[a-z0-9-]+\.ts$/.test(f))
    .filter((f) => /export (async )?function run\(/.test(readFileSync(`${BENCH_DIR}${f}`, 'utf8')))
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();
}

interface BenchModule {
  description?: string;
  options?: BenchOptions;
  run?: (args: BenchArgs) => Promise<object>;
}

async function loadBench(name: string): Promise<BenchModule> {
  if (!/^[a-z0-9-]+$/.test(name) || !availableBenches().includes(name)) {
    throw invalidInput(`unknown benchmark "${name}"; available: ${availableBenches().join(', ') || 'none'}`, 'name');
  }
  return (await import(`${BENCH_DIR}${name}.ts`)) as BenchModule;
}

/** `--key value` / `--key=value` / a bare `--flag` (= "true") after the name; `--json` is the command's own. */
export function splitBenchArgs(rest: string[]): { options: Record<string, string>; help: boolean } {
  const options: Record<string, string> = {};
  let help = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--help' || a === '-h') {
      help = true;
      continue;
    }
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw invalidInput(`unexpected argument ${JSON.stringify(a)}; options are --name value`, a);
    if (m[1] === 'json') continue;
    if (m[2] !== undefined) options[m[1]] = m[2];
    else if (rest[i + 1] !== undefined && !rest[i + 1].startsWith('--')) options[m[1]] = rest[++i];
    else options[m[1]] = 'true';
  }
  return { options, help };
}

export function register(program: Command): void {
  program
    .command('bench')
    .argument('[name]', 'the benchmark')
    .description('run a benchmark (with its baseline, in one run) and print the figures; bench NAME --help lists its options')
    .option('--json', 'one JSON object on stdout')
    .helpOption(false)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .action(async (name: string | undefined, flags: { json?: boolean }, cmd: Command) => {
      const { options, help } = splitBenchArgs(cmd.args.slice(name === undefined ? 0 : 1));
      if (name === undefined) {
        const lines = ['Usage: turnstream bench NAME [options] [--json]', '', 'Benchmarks (bench NAME --help for the options of one):'];
        for (const b of availableBenches()) lines.push(`  ${b.padEnd(10)} ${(await loadBench(b)).description ?? ''}`);
        process.stdout.write(`${lines.join('\n')}\n`);
        if (!help) process.exitCode = 2;
        return;
      }
      const mod = await loadBench(name);
      if (typeof mod.run !== 'function') throw new Error(`bench/${name}.ts exports no run()`);
      const spec = mod.options ?? {};
      if (help) {
        process.stdout.write(benchHelp(name, mod.description ?? '', spec));
        return;
      }
      // Checked before anything starts: an unknown option or a bad value is one line, exit 2.
      const resolved = mod.options ? resolveOptions(spec, options) : options;
      const result = await mod.run({ config: loadConfig(), options: resolved, progress: (l) => process.stderr.write(`${l}\n`) });
      process.stdout.write(flags.json ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
      // Benchmarks leave Kafka clients and timers behind on purpose-built fixtures; exit now.
      process.exit(0);
    });
}
