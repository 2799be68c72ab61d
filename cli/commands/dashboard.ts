/**
 * `turnstream dashboard [--port 30001] [--host addr] [--refresh ms] [--tag name]`: the
 * analytics page (GET /dashboard) and its JSON API (GET /api/…) over ClickHouse.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { startDashboard } from '../../analytics/index.ts';
import { AnalyticsStore, migrateWhenReady } from '../../warehouse/index.ts';
import { createLogger } from '../../core/index.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';
import { analyticsFromConfig } from '../analytics-options.ts';

/** What opens the dashboard: its own key and every API and service key (the part before `:`). */
export function dashboardKeys(config: TurnstreamConfig): string[] {
  const bare = (entries: string[]) => entries.map((e) => e.split(':')[0].trim()).filter(Boolean);
  return [...(config.dashboardKey ? [config.dashboardKey] : []), ...bare(config.gateway.apiKeys), ...bare(config.gateway.serviceKeys)];
}

export function register(program: Command): void {
  program
    .command('dashboard')
    .description('serve the analytics dashboard (learning curve, funnel, judges, users, DLQ)')
    .option('--port <port>', 'port', '30001')
    .option('--host <addr>', 'bind address (default HOST or 127.0.0.1)')
    .option('--refresh <ms>', 'how often the page refreshes itself', '5000')
    .option('--tag <name>', 'show a replay tag instead of the live pipeline', '')
    .action(async (flags: { port: string; host?: string; refresh: string; tag: string }) => {
      const config = loadConfig();
      const logger = createLogger('dashboard', config.logLevel);
      const store = new AnalyticsStore(analyticsFromConfig(config));
      // The tables may not exist yet (the sink not started): create them so the page works.
      await migrateWhenReady(store, { baseMs: 1000, maxMs: 1000, attempts: 30, logger });
      const d = await startDashboard({
        store,
        port: Number(flags.port),
        host: flags.host ?? config.host,
        refreshMs: Number(flags.refresh),
        tag: flags.tag,
        evalFile: join(config.home, 'eval', 'latest.json'),
        logger,
        keys: dashboardKeys(config),
        metricsKey: config.metricsKey,
      });
      process.stdout.write(`turnstream dashboard: ${d.url}/dashboard\n`);
      const stop = (): void => {
        void d
          .close()
          .then(() => store.close())
          .finally(() => process.exit(0));
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
}
