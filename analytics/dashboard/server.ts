/**
 * The analytics HTTP service: `GET /dashboard` (the page), `GET /api/…` (JSON it polls),
 * `GET /metrics` (Prometheus) and `GET /healthz`. Errors use the OpenAI error shape.
 */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { metricsRegistry, toTurnstreamError, type Logger } from '../../streams/index.ts';
import { dlqByReason } from '../queries/dlq-by-reason.ts';
import { funnel } from '../queries/funnel.ts';
import { judgeStats } from '../queries/judge-stats.ts';
import { latencyPercentiles } from '../queries/latency.ts';
import { rewardByVersion } from '../queries/reward-by-version.ts';
import { rewardOverTime } from '../queries/reward-over-time.ts';
import { sessionStats } from '../queries/session-stats.ts';
import { userStats } from '../queries/user-stats.ts';
import { overview } from '../overview.ts';
import type { AnalyticsStore } from '../store.ts';
import { dashboardPage } from './page.ts';

export interface DashboardOptions {
  store: AnalyticsStore;
  /** @default 30001 */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** How often the page refreshes itself, in ms. @default 5000 */
  refreshMs?: number;
  /** Bucket of the reward-over-time chart, in ms. @default 60000 */
  bucketMs?: number;
  /** Replay tag to show; '' = live. @default '' */
  tag?: string;
  /** @default 'turnstream analytics' */
  title?: string;
  logger?: Logger;
}

export interface DashboardHandle {
  app: FastifyInstance;
  /** http://host:port */
  url: string;
  close(): Promise<void>;
}

let chartJs: string | undefined;
/** Chart.js's UMD bundle from node_modules (resolved through the package, read once). */
function chartBundle(): string {
  chartJs ??= readFileSync(join(dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.min.js'), 'utf8');
  return chartJs;
}

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  const e = toTurnstreamError(err);
  const status = e.retriable ? 503 : 500;
  return reply
    .code(status)
    .send({ error: { message: e.message, type: e.retriable ? 'service_unavailable' : 'server_error', code: e.code, param: null } });
}

/** Builds the app without listening (tests inject requests). */
export function buildDashboardApp(o: DashboardOptions): FastifyInstance {
  // No request log: the page polls every few seconds. Failures are logged below.
  const app = Fastify();
  const log = o.logger;
  const store = o.store;
  const scope = { tag: o.tag ?? '' };
  const page = dashboardPage({ refreshMs: o.refreshMs ?? 5000, title: o.title ?? 'turnstream analytics' });
  const json = <T>(path: string, run: (q: Record<string, string | undefined>) => Promise<T>): void => {
    app.get(path, async (req, reply) => {
      try {
        return reply.header('cache-control', 'no-store').send(await run(req.query as Record<string, string | undefined>));
      } catch (err) {
        log?.warn({ path, err: (err as Error).message }, 'query failed');
        return sendError(reply, err);
      }
    });
  };
  const limitOf = (q: Record<string, string | undefined>): number | undefined =>
    q.limit && /^\d+$/.test(q.limit) ? Number(q.limit) : undefined;

  app.get('/', async (_req, reply) => reply.redirect('/dashboard'));
  app.get('/dashboard', async (_req, reply) => reply.type('text/html; charset=utf-8').send(page));
  app.get('/assets/chart.umd.min.js', async (_req, reply) =>
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'max-age=3600').send(chartBundle()),
  );
  json('/api/overview', () => overview(store, { ...scope, bucketMs: o.bucketMs }));
  json('/api/funnel', () => funnel(store, scope));
  json('/api/reward-by-version', () => rewardByVersion(store, scope));
  json('/api/reward-over-time', (q) =>
    rewardOverTime(store, { ...scope, bucketMs: q.bucket_ms ? Number(q.bucket_ms) || undefined : o.bucketMs, limit: limitOf(q) }),
  );
  json('/api/judges', () => judgeStats(store, scope));
  json('/api/latency', () => latencyPercentiles(store));
  json('/api/users', (q) => userStats(store, { ...scope, limit: limitOf(q) }));
  json('/api/sessions', (q) => sessionStats(store, { ...scope, limit: limitOf(q), userId: q.user }));
  json('/api/dlq', () => dlqByReason(store, scope));
  app.get('/healthz', async (_req, reply) => {
    const ok = await store.ping();
    return reply.code(ok ? 200 : 503).send({ ok, clickhouse: store.options.url });
  });
  app.get('/metrics', async (_req, reply) => reply.type(metricsRegistry.contentType).send(await metricsRegistry.metrics()));
  return app;
}

/** Starts the service and listens. */
export async function startDashboard(o: DashboardOptions): Promise<DashboardHandle> {
  const app = buildDashboardApp(o);
  const host = o.host ?? '127.0.0.1';
  await app.listen({ port: o.port ?? 30001, host });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (o.port ?? 30001);
  return { app, url: `http://${host}:${port}`, close: () => app.close() };
}
