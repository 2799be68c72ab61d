/** `turnstream report [--json] [--tag name] [--compare name]`: the funnel and learning curve from ClickHouse, or two runs side by side. */
import type { Command } from 'commander';
import { buildReport } from '../../analytics/index.ts';
import { AnalyticsStore, migrate } from '../../warehouse/index.ts';
import { invalidInput } from '../../core/index.ts';
import { loadConfig } from '../config.ts';
import { analyticsFromConfig } from '../analytics-options.ts';

export function register(program: Command): void {
  program
    .command('report')
    .description('print the funnel and the learning curve (reward per policy version) from ClickHouse')
    .option('--json', 'one JSON object: funnel, reward_by_version, judges, latency, users, sessions, dlq')
    .option('--tag <name>', 'a replay tag instead of the live pipeline', '')
    .option(
      '--source <source>',
      'live (gateway traffic) or imported (turnstream import); the live report never counts imported turns',
      'live',
    )
    .option(
      '--compare <name>',
      "compare with another run: a replay tag, or '' for the live pipeline (pairs, judged, samples, score distribution, agreement)",
    )
    .action(async (flags: { json?: boolean; tag: string; source: string; compare?: string }) => {
      if (flags.source !== 'live' && flags.source !== 'imported')
        throw invalidInput(`--source must be live or imported, got ${JSON.stringify(flags.source)}`, '--source');
      const store = new AnalyticsStore(analyticsFromConfig(loadConfig()));
      try {
        await migrate(store); // an empty report rather than "unknown table" before the first sink run
        process.stdout.write(
          `${await buildReport(store, { tag: flags.tag, source: flags.source, compare: flags.compare, json: flags.json })}\n`,
        );
      } finally {
        await store.close();
      }
    });
}
