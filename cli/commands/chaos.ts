/**
 * `turnstream chaos [--cluster] [--json] [--calls N] [--only names] [--dist-dir DIR] [--down-seconds S] [--keep]`:
 * the fault suite (bench/chaos/run-chaos.ts) on a stack of its own; `--cluster` runs the scale
 * events on three brokers, two gateways and three instances of each processor. Prints a table per
 * scenario, or one JSON object with `--json`; exits 1 when a scenario lost or doubled anything.
 */
import type { Command } from 'commander';
import { chaosTable, runChaos } from '../../bench/index.ts';
import { loadConfig, SettingsReader } from '../config.ts';

export function register(program: Command): void {
  program
    .command('chaos')
    .description(
      'fault suite on a stack of its own: kill -9 the broker, gateway, processors, trainer; stop ClickHouse and the registry; corrupt records; an oversized turn; 200 slow readers',
    )
    .option('--json', 'one JSON object on stdout')
    .option(
      '--gateway-affinity <mode>',
      'with --cluster: session (a conversation stays on one gateway) or none (each call to the next gateway)',
      'session',
    )
    .option(
      '--cluster',
      'three brokers, two gateways on homes of their own, three instances of each processor: scale a group in and out, hold an instance while its partitions move, kill brokers, restart the gateways, move the trainer',
    )
    .option('--calls <n>', 'calls per scenario', '60')
    .option('--only <names>', 'only scenarios whose name contains one of these (comma separated)')
    .option('--dist-dir <dir>', 'where the Kafka jars and Apicurio are (default: TURNSTREAM_HOME)')
    .option('--down-seconds <s>', 'how long a stopped dependency stays down', '10')
    .option('--repeat <n>', 'run the selected scenarios this many times', '1')
    .option('--keep', 'leave the stack and its home for a look at the logs')
    .action(
      async (flags: {
        json?: boolean;
        calls: string;
        only?: string;
        distDir?: string;
        downSeconds: string;
        repeat: string;
        keep?: boolean;
        cluster?: boolean;
        gatewayAffinity: string;
      }) => {
        const config = loadConfig();
        const r = new SettingsReader({
          '--calls': flags.calls,
          '--down-seconds': flags.downSeconds,
          '--repeat': flags.repeat,
          '--gateway-affinity': flags.gatewayAffinity,
        });
        const { calls, downSeconds, repeat, affinity } = r.done(
          {
            affinity: r.oneOf<'session' | 'none'>('--gateway-affinity', 'session', ['session', 'none']),
            calls: r.number('--calls', 60, { integer: true, min: 4 }),
            downSeconds: r.number('--down-seconds', 10, { min: 0 }),
            repeat: r.number('--repeat', 1, { integer: true, min: 1 }),
          },
          'invalid flags',
        );
        const result = await runChaos({
          calls,
          downSeconds,
          repeat,
          only: flags.only
            ?.split(',')
            .map((s) => s.trim())
            .filter(Boolean),
          distDir: flags.distDir ?? config.home,
          keep: flags.keep,
          cluster: flags.cluster,
          affinity,
          progress: (line) => process.stderr.write(`${line}\n`),
        });
        if (flags.json) process.stdout.write(`${JSON.stringify(result)}\n`);
        else {
          process.stdout.write(chaosTable(result));
          process.stdout.write(
            `\nweight versions ${result.weight_versions} (${result.weight_versions_consecutive ? 'consecutive' : 'NOT consecutive'}); ${result.ok ? 'PASS' : 'FAIL'} in ${result.seconds} s\n`,
          );
          for (const s of result.scenarios)
            if (Object.keys(s.details).length) process.stdout.write(`  ${s.scenario}: ${JSON.stringify(s.details)}\n`);
        }
        process.exit(result.ok ? 0 : 1);
      },
    );
}
