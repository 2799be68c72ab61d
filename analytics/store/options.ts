import type { createClient } from '@clickhouse/client';
import type { Secret, TlsOptions } from '../../core/index.ts';
/** Where the analytics tables live. */
export interface AnalyticsOptions {
  /** ClickHouse HTTP URL. @default 'http://127.0.0.1:8123' */
  url?: string;
  /** @default 'default' */
  username?: string;
  /** A `Secret` prints as `[secret from …]` wherever the options are logged. @default '' */
  password?: string | Secret;
  /** Whom to trust over https (CLICKHOUSE_CA_FILE). @default Node's roots */
  tls?: TlsOptions;
  /** Database of the analytics tables; created when missing. @default 'turnstream' */
  database?: string;
  /**
   * Prepended to every table name, so tests (or two pipelines) share one database without
   * sharing tables. Characters other than [A-Za-z0-9_] become `_`. @default ''
   */
  tablePrefix?: string;
  /** Per-request timeout in ms. @default 30000 */
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
  const database = o.database ?? 'turnstream';
  if (!IDENT.test(database)) throw new Error(`not a ClickHouse database name: ${database}`);
  return {
    url: (o.url ?? 'http://127.0.0.1:8123').replace(/\/+$/, ''),
    username: o.username ?? 'default',
    password: o.password ?? '',
    tls: o.tls,
    database,
    tablePrefix: identFragment(o.tablePrefix ?? ''),
    requestTimeoutMs: o.requestTimeoutMs ?? 30000,
  };
}
