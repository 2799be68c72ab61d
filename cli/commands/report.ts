/** `turnstream report [--json] [--tag name] [--compare name]`: the funnel and learning curve from ClickHouse, or two runs side by side. */
import type { Command } from 'commander';
import { AnalyticsStore, buildReport, migrate } from '../../analytics/index.ts';
import { loadConfig } from '../config.ts';
import { analyticsFromConfig } from './sink.ts';

export function register(program: Command): void {
  program
    .command('report')
    .description('print the funnel and the learning curve (reward per policy version) from ClickHouse')
    .option('--json', 'one JSON object: funnel, reward_by_version, judges, latency, users, sessions, dlq')
    .option('--tag <name>', 'a replay tag instead of the live pipeline', '')
    .option(
      '--compare <name>',
      "compare with another run: a replay tag, or '' for the live pipeline (pairs, judged, samples, score distribution, agreement)",
    )
    .action(async (flags: { json?: boolean; tag: string; compare?: string }) => {
      const store = new AnalyticsStore(analyticsFromConfig(loadConfig()));
      try {
        await migrate(store); // an empty report rather than "unknown table" before the first sink run
        process.stdout.write(`${await buildReport(store, { tag: flags.tag, compare: flags.compare, json: flags.json })}\n`);
      } finally {
        await store.close();
      }
    });
}
