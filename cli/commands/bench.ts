/**
 * `turnstream bench <name> [--json] [options…]`: runs `bench/<name>.ts`, which exports
 * `run(args: BenchArgs): Promise<object>` and measures against a baseline in the same run.
 * Helper modules in bench/ that export no `run` are not benchmarks and are not listed. What a
 * benchmark declares (description, options, baseline and ratio, cleanup): bench/options.ts.
 * `bench NAME --help` lists its options; an unknown option is an error. Prints the result as one
 * JSON object (`--json`) or as indented JSON for people.
 */
import type { Command } from 'commander';
import { runBenchCommand } from '../../bench/index.ts';
import { loadConfig } from '../config.ts';

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
      const { output, exitCode } = await runBenchCommand(name, cmd.args.slice(name === undefined ? 0 : 1), loadConfig(), (l) =>
        process.stderr.write(`${l}\n`),
      );
      if (typeof output === 'string') process.stdout.write(output);
      else process.stdout.write(flags.json ? `${JSON.stringify(output)}\n` : `${JSON.stringify(output, null, 2)}\n`);
      if (exitCode !== 0) {
        process.exitCode = exitCode;
        return;
      }
      // Benchmarks leave Kafka clients and timers behind on purpose-built fixtures; exit now.
      if (typeof output !== 'string') process.exit(0);
    });
}
