/** `turnstream report [--json] [--tag name]`: the funnel and learning curve from ClickHouse. */
import type { Command } from 'commander';
import { AnalyticsStore, formatReport, migrate, overview } from '../../analytics/index.ts';
import { loadConfig } from '../config.ts';
import { analyticsFromConfig } from './sink.ts';

export function register(program: Command): void {
  program
    .command('report')
    .description('print the funnel and the learning curve (reward per policy version) from ClickHouse')
    .option('--json', 'one JSON object: funnel, reward_by_version, judges, latency, users, sessions, dlq')
    .option('--tag <name>', 'a replay tag instead of the live pipeline', '')
    .action(async (flags: { json?: boolean; tag: string }) => {
      const store = new AnalyticsStore(analyticsFromConfig(loadConfig()));
      try {
        await migrate(store); // an empty report rather than "unknown table" before the first sink run
        const o = await overview(store, { tag: flags.tag });
        process.stdout.write(flags.json ? `${JSON.stringify(o)}\n` : `${formatReport(o)}\n`);
      } finally {
        await store.close();
      }
    });
}
