/**
 * `turnstream sink [--instance id] [--dashboard [port]]`: every topic into ClickHouse. Run
 * several instances to share the partitions. Settings: `config.clickhouse` (where) and
 * `config.sink` (consumer group, batch size, flush interval).
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { startDashboard } from '../../analytics/index.ts';
import type { ClickhouseSinkHandle } from '../../processors/index.ts';
import { createLogger } from '../../core/index.ts';
import { connectService, sinkService } from '../../stack/index.ts';
import { loadConfig, SettingsReader, type TurnstreamConfig } from '../config.ts';

/** Starts the sink from the configuration, built by stack/ (also for `turnstream up`). */
export async function startSinkFromConfig(
  config: TurnstreamConfig,
  instanceId = '0',
  replayTags: readonly string[] | 'all' = config.sink.replayTags,
): Promise<ClickhouseSinkHandle> {
  const logger = createLogger('clickhouse-sink', config.logLevel);
  const link = await connectService(config, `turnstream-clickhouse-sink-${instanceId}`, logger);
  return sinkService(config, link, { replayTags, logger });
}

/** `--replay-tags`, checked as `SINK_REPLAY_TAGS` is. */
export function replayTagsFlag(value: string): readonly string[] | 'all' {
  const r = new SettingsReader({ '--replay-tags': value });
  const tags = r.replayTags('--replay-tags', []);
  return r.done(tags, 'invalid flag');
}

export function register(program: Command): void {
  program
    .command('sink')
    .description('store every topic in ClickHouse for analytics (idempotent, resumes after outages)')
    .option('--instance <id>', 'instance id, unique among sink instances', '0')
    .option('--dashboard [port]', 'also serve the analytics dashboard (default port 30001)')
    .option('--replay-tags <all|a,b>', 'replays to store as well: all (the default), none, or a,b (SINK_REPLAY_TAGS)')
    .action(async (flags: { instance: string; dashboard?: string | boolean; replayTags?: string }) => {
      const config = loadConfig();
      const replayTags = flags.replayTags === undefined ? config.sink.replayTags : replayTagsFlag(flags.replayTags);
      const sink = await startSinkFromConfig(config, flags.instance, replayTags);
      await sink.ready;
      process.stdout.write(
        `turnstream sink (instance ${flags.instance}) is running → ${sink.store.options.url} database ${sink.store.options.database}\n`,
      );
      const dashboard = flags.dashboard
        ? await startDashboard({
            store: sink.store,
            port: flags.dashboard === true ? 30001 : Number(flags.dashboard),
            host: config.host,
            evalFile: join(config.home, 'eval', 'latest.json'),
          })
        : undefined;
      if (dashboard) process.stdout.write(`dashboard: ${dashboard.url}/dashboard\n`);
      let stopping = false;
      const stop = (): void => {
        if (stopping) return;
        stopping = true;
        void (async () => {
          await dashboard?.close();
          await sink.stop();
        })().then(
          () => process.exit(0),
          (err) => {
            process.stderr.write(`turnstream sink: stop failed: ${(err as Error).message}\n`);
            process.exit(1);
          },
        );
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
}
