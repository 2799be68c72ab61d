/**
 * `turnstream bench <name> [--json] [options…]`: runs `bench/<name>.ts`, which exports
 * `run(args: BenchArgs): Promise<object>` and measures against a baseline in the same run.
 * Helper modules in bench/ that export no `run` are not benchmarks and are not listed.
 * Prints the result as one JSON object (`--json`) or as indented JSON for people.
 */
import type { Command } from 'commander';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfig, type TurnstreamConfig } from '../config.ts';

const BENCH_DIR = fileURLToPath(new URL('../../bench/', import.meta.url));

/** What every benchmark receives. */
export interface BenchArgs {
  config: TurnstreamConfig;
  /** `--key value` options after the name, as strings. */
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

export function register(program: Command): void {
  program
    .command('bench <name>')
    .description('run a benchmark (with its baseline, in one run) and print the figures')
    .option('--json', 'one JSON object on stdout')
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .action(async (name: string, flags: { json?: boolean }, cmd: Command) => {
      const file = `${BENCH_DIR}${name}.ts`;
      if (!/^[a-z0-9-]+$/.test(name) || !existsSync(file)) {
        process.stderr.write(`unknown benchmark "${name}". Available: ${availableBenches().join(', ') || 'none'}\n`);
        process.exitCode = 2;
        return;
      }
      const options: Record<string, string> = {};
      const rest = cmd.args.slice(1);
      for (let i = 0; i < rest.length; i++) {
        const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(rest[i]);
        if (!m || m[1] === 'json') continue;
        if (m[2] !== undefined) options[m[1]] = m[2];
        else if (rest[i + 1] !== undefined && !rest[i + 1].startsWith('--')) options[m[1]] = rest[++i];
        else options[m[1]] = 'true';
      }
      const mod = (await import(file)) as { run?: (args: BenchArgs) => Promise<object> };
      if (typeof mod.run !== 'function') throw new Error(`bench/${name}.ts exports no run()`);
      const result = await mod.run({ config: loadConfig(), options, progress: (l) => process.stderr.write(`${l}\n`) });
      process.stdout.write(flags.json ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
      // Benchmarks leave Kafka clients and timers behind on purpose-built fixtures; exit now.
      process.exit(0);
    });
}
