/**
 * The analytics HTTP service: `GET /dashboard` (the page), `GET /api/…` (JSON it polls),
 * `GET /metrics` (Prometheus) and `GET /healthz`. Errors use the OpenAI error shape.
 *
 * It shows per-user and per-session data, so with `keys` given every route but `/healthz`
 * needs one of them: a browser gets a login prompt (HTTP Basic, the key as the password; the
 * page's own API calls then carry it), a script sends `Authorization: Bearer <key>`.
 * `/metrics` takes the metrics key instead when one is given.
 */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { invalidInput, metricsRegistry, toTurnstreamError, type Logger, KeySet, presentedKey } from '../../core/index.ts';
import { compareRuns } from '../queries/compare-runs.ts';
import { dlqByReason } from '../queries/dlq-by-reason.ts';
import { funnel } from '../queries/funnel.ts';
import { judgeStats } from '../queries/judge-stats.ts';
import { latencyPercentiles } from '../queries/latency.ts';
import { rewardByVersion } from '../queries/reward-by-version.ts';
import { passRateByVersion } from '../queries/pass-rate-by-version.ts';
import { passRateBySplit } from '../queries/pass-rate-by-split.ts';
import { trainingByVersion, trainingModels } from '../queries/training-by-version.ts';
import { rewardOverTime } from '../queries/reward-over-time.ts';
import { listRuns } from '../queries/runs.ts';
import type { QueryScope, TurnSource } from '../queries/scope.ts';
import { sessionStats } from '../queries/session-stats.ts';
import { userStats } from '../queries/user-stats.ts';
import { overview } from '../overview.ts';
import type { AnalyticsStore } from '../../warehouse/index.ts';
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
  /** Replay tag shown when the page or API call names none (`?tag=`); '' = live. @default '' */
  tag?: string;
  /** @default 'turnstream analytics' */
  title?: string;
  /** Keys that open the dashboard (`TURNSTREAM_DASHBOARD_KEY`, the API keys). @default [] = open */
  keys?: readonly string[];
  /** Key `/metrics` needs (`TURNSTREAM_METRICS_KEY`). @default the dashboard's keys */
  metricsKey?: string;
  /** The last `turnstream eval` result (`$TURNSTREAM_HOME/eval/latest.json`), shown as its own panel. @default none */
  evalFile?: string;
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
  if (e.code === 'TS_ERR_INVALID_INPUT') {
    return reply.code(400).send({ error: { message: e.message, type: 'invalid_request_error', code: e.code, param: e.param ?? null } });
  }
  const status = e.retriable ? 503 : 500;
  return reply
    .code(status)
    .send({ error: { message: e.message, type: e.retriable ? 'service_unavailable' : 'server_error', code: e.code, param: null } });
}

/** A run named in a query parameter: '' (live) or a replay tag as `turnstream replay --tag` accepts. */
function runParam(q: Record<string, string | undefined>, name: string, fallback: string): string {
  const v = q[name];
  if (v === undefined) return fallback;
  if (!/^[A-Za-z0-9_-]*$/.test(v))
    throw invalidInput(`${name} must be a replay tag (letters, digits, - and _) or empty for the live pipeline`, name);
  return v;
}

const MODEL_ID = /^[A-Za-z0-9._:/-]{1,200}$/;

/** `?source=live|imported`: live traffic (the default) or imported history. */
function sourceParam(q: Record<string, string | undefined>): TurnSource {
  const v = q.source ?? 'live';
  if (v !== 'live' && v !== 'imported') throw invalidInput('source must be live or imported', 'source');
  return v;
}

/** The fields of an eval result (eval/report.ts toResultJson) the dashboard shows. */
interface EvalSummary {
  mode: string;
  method: string;
  interactions: number;
  seeds: number;
  before: number;
  after: number;
  p_value: number;
  wall_s: number;
  finished_at: number;
  per_version: Array<{ version: number; interactions: number; satisfaction: number; byPersona: Record<string, number> }>;
  per_persona: Record<string, { preference: string; before: number; after: number }>;
}

/** Builds the app without listening (tests inject requests). */
export function buildDashboardApp(o: DashboardOptions): FastifyInstance {
  // No request log: the page polls every few seconds. Failures are logged below.
  const app = Fastify();
  const log = o.logger;
  const keys = new KeySet((o.keys ?? []).map((k) => [k, true] as const));
  const metricsKey = o.metricsKey ? new KeySet([[o.metricsKey, true]]) : null;
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0];
    if (path === '/healthz') return;
    const need = path === '/metrics' && metricsKey ? metricsKey : keys;
    if (need.size === 0 || need.match(presentedKey(req.headers))) return;
    const message =
      path === '/metrics' && metricsKey
        ? '/metrics needs the metrics key'
        : 'the dashboard needs a key (TURNSTREAM_DASHBOARD_KEY or an API key)';
    return reply
      .code(401)
      .header('www-authenticate', 'Basic realm="turnstream dashboard", charset="UTF-8"')
      .send({ error: { message, type: 'authentication_error', code: 'TS_ERR_UNAUTHORIZED', param: null } });
  });
  const store = o.store;
  const scopeOf = (q: Record<string, string | undefined>): QueryScope => ({ tag: runParam(q, 'tag', o.tag ?? ''), source: sourceParam(q) });
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
  json('/api/overview', (q) => overview(store, { ...scopeOf(q), bucketMs: o.bucketMs }));
  json('/api/funnel', (q) => funnel(store, scopeOf(q)));
  json('/api/reward-by-version', (q) => rewardByVersion(store, scopeOf(q)));
  json('/api/pass-rate-by-version', (q) => passRateByVersion(store, { limit: limitOf(q) }));
  json('/api/reward-over-time', (q) =>
    rewardOverTime(store, { ...scopeOf(q), bucketMs: q.bucket_ms ? Number(q.bucket_ms) || undefined : o.bucketMs, limit: limitOf(q) }),
  );
  json('/api/judges', (q) => judgeStats(store, scopeOf(q)));
  json('/api/latency', (q) => latencyPercentiles(store, scopeOf(q)));
  json('/api/users', (q) => userStats(store, { ...scopeOf(q), limit: limitOf(q) }));
  json('/api/sessions', (q) => sessionStats(store, { ...scopeOf(q), limit: limitOf(q), userId: q.user }));
  json('/api/dlq', (q) => dlqByReason(store, scopeOf(q)));
  json('/api/runs', () => listRuns(store));
  // The training run of one model (?model=; default the most recently active): per version what
  // the learner reported, and its rollouts' pass rates by split and verdict part.
  json('/api/training', async (q) => {
    const models = await trainingModels(store);
    const asked = q.model;
    if (asked !== undefined && !MODEL_ID.test(asked)) throw invalidInput('model must be a model id (letters, digits, . _ : / -)', 'model');
    const model = asked ?? models[0]?.model_id ?? null;
    if (model === null) return { models, model, versions: [], pass_rates: [] };
    const [versions, passRates] = await Promise.all([trainingByVersion(store, model), passRateBySplit(store, model)]);
    return { models, model, versions, pass_rates: passRates };
  });
  // The latest simulated-user evaluation: held-out satisfaction per version, overall and per persona.
  json('/api/eval', async () => {
    if (!o.evalFile) return { available: false };
    const text = await readFile(o.evalFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (text === null) return { available: false };
    const r = JSON.parse(text) as EvalSummary;
    return {
      available: true,
      mode: r.mode,
      method: r.method,
      interactions: r.interactions,
      seeds: r.seeds,
      before: r.before,
      after: r.after,
      p_value: r.p_value,
      wall_s: r.wall_s,
      finished_at: r.finished_at,
      per_version: r.per_version,
      per_persona: r.per_persona,
    };
  });
  // Two runs side by side: ?a=<tag>&b=<tag>, '' (or left out, for a) = the live pipeline.
  json('/api/compare', (q) => compareRuns(store, { a: runParam(q, 'a', ''), b: runParam(q, 'b', '') }));
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
