import type { createClient } from '@clickhouse/client';
import type { Secret, TlsOptions } from '../core/index.ts';

/** Where the analytics tables live when nothing is set (`CLICKHOUSE_*`). */
export const ANALYTICS_DEFAULTS = Object.freeze({
  url: 'http://127.0.0.1:8123',
  username: 'default',
  password: '',
  database: 'turnstream',
  tablePrefix: '',
  requestTimeoutMs: 30_000,
});

/** Where the analytics tables live. */
export interface AnalyticsOptions {
  /** ClickHouse HTTP URL. `CLICKHOUSE_URL` @default ANALYTICS_DEFAULTS.url */
  url?: string;
  /** `CLICKHOUSE_USER` @default ANALYTICS_DEFAULTS.username ('default', ClickHouse's default user) */
  username?: string;
  /** `CLICKHOUSE_PASSWORD`; a `Secret` prints as `[secret from …]` wherever the options are logged. @default ANALYTICS_DEFAULTS.password ('') */
  password?: string | Secret;
  /** Whom to trust over https (CLICKHOUSE_CA_FILE). @default Node's roots */
  tls?: TlsOptions;
  /** Database of the analytics tables; created when missing. `CLICKHOUSE_DATABASE` @default ANALYTICS_DEFAULTS.database ('turnstream') */
  database?: string;
  /**
   * Prepended to every table name, so tests (or two pipelines) share one database without
   * sharing tables. Characters other than [A-Za-z0-9_] become `_`. `CLICKHOUSE_TABLE_PREFIX` @default ANALYTICS_DEFAULTS.tablePrefix ('')
   */
  tablePrefix?: string;
  /** Per-request timeout in ms. @default ANALYTICS_DEFAULTS.requestTimeoutMs (30000) */
  requestTimeoutMs?: number;
  /**
   * A connection to use instead of HTTP to `url`: an `@clickhouse/client` connection such as
   * npm chdb's `createChdbConnection` (ClickHouse in-process; the tests check the DDL and queries
   * on a current ClickHouse with it). @default undefined (HTTP)
   */
  connection?: NonNullable<Parameters<typeof createClient>[0]>['connection'];
}

export interface ResolvedAnalyticsOptions {
  url: string;
  username: string;
  password: string | Secret;
  tls: TlsOptions | undefined;
  database: string;
  tablePrefix: string;
  requestTimeoutMs: number;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Turns any string into a safe identifier fragment (`t-sink-1a2b.` → `t_sink_1a2b_`). */
export const identFragment = (s: string): string => s.replace(/[^A-Za-z0-9_]/g, '_');

export function resolveAnalyticsOptions(o: AnalyticsOptions = {}): ResolvedAnalyticsOptions {
  const database = o.database ?? ANALYTICS_DEFAULTS.database;
  if (!IDENT.test(database)) throw new Error(`not a ClickHouse database name: ${database}`);
  return {
    url: (o.url ?? ANALYTICS_DEFAULTS.url).replace(/\/+$/, ''),
    username: o.username ?? ANALYTICS_DEFAULTS.username,
    password: o.password ?? ANALYTICS_DEFAULTS.password,
    tls: o.tls,
    database,
    tablePrefix: identFragment(o.tablePrefix ?? ANALYTICS_DEFAULTS.tablePrefix),
    requestTimeoutMs: o.requestTimeoutMs ?? ANALYTICS_DEFAULTS.requestTimeoutMs,
  };
}
