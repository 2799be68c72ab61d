/**
 * The ClickHouse connection of analytics: typed queries and JSONEachRow inserts into the
 * tables of one database and prefix. Failures surface as retriable TS_ERR_UNAVAILABLE
 * (server unreachable) or TS_ERR_INTERNAL (the server refused the statement).
 */
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ErrorCodes, Secret, TurnstreamError, untrustedCertificate } from '../core/index.ts';
import type { Column } from './row-binary.ts';
import { resolveAnalyticsOptions, type AnalyticsOptions, type ResolvedAnalyticsOptions } from './options.ts';
import { tableNames, type Tables } from './tables.ts';

/** Server settings every request carries: 64-bit integers as JSON numbers (old and new servers). */
const SETTINGS = { output_format_json_quote_64bit_integers: 0 } as const;

export class AnalyticsStore {
  readonly options: ResolvedAnalyticsOptions;
  readonly tables: Tables;
  private readonly client: ClickHouseClient;
  private serverVersion: string | undefined;

  constructor(options: AnalyticsOptions = {}) {
    this.options = resolveAnalyticsOptions(options);
    this.tables = tableNames(this.options.database, this.options.tablePrefix);
    this.client = createClient({
      url: this.options.url,
      username: this.options.username,
      password: this.options.password instanceof Secret ? this.options.password.reveal() : this.options.password,
      ...(this.options.tls?.ca ? { tls: { ca_cert: Buffer.from(this.options.tls.ca) } } : {}),
      request_timeout: this.options.requestTimeoutMs,
      clickhouse_settings: SETTINGS,
      // Errors are ours to report (with backoff and context); the client's own logger would
      // print every refused connection while ClickHouse restarts.
      log: { level: ClickHouseLogLevel.OFF },
      // Short-lived sockets: after a server restart a stale keep-alive socket fails once.
      keep_alive: { enabled: true, idle_socket_ttl: 1500 },
      ...(options.connection ? { connection: options.connection } : {}),
    });
  }

  /** `SELECT version()`, cached. */
  async version(): Promise<string> {
    this.serverVersion ??= (await this.rows<{ v: string }>('SELECT version() AS v'))[0]?.v ?? 'unknown';
    return this.serverVersion;
  }

  /** Major.minor of the server, e.g. 18.16 → 18.16. */
  async versionNumber(): Promise<number> {
    const [major = 0, minor = 0] = (await this.version()).split('.').map(Number);
    return major + minor / 100;
  }

  /** Runs a statement that returns nothing (DDL). */
  async command(sql: string): Promise<void> {
    await this.wrap(sql, () => this.client.command({ query: sql }));
  }

  /** Runs a SELECT and returns its rows. */
  async rows<T>(sql: string): Promise<T[]> {
    return this.wrap(sql, async () => {
      const rs = await this.client.query({ query: sql, format: 'JSONEachRow' });
      return (await rs.json()) as T[];
    });
  }

  /** Inserts rows as JSONEachRow into a fully qualified table name. */
  async insert(table: string, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    await this.wrap(`INSERT INTO ${table}`, () => this.client.insert({ table, values: rows as object[], format: 'JSONEachRow' }));
  }

  /** The columns an INSERT can fill (not MATERIALIZED or ALIAS), in table order (system.columns has no `position` on 18.16). */
  async columns(table: string): Promise<Column[]> {
    const rows = await this.rows<{ name: string; type: string; default_type: string }>(`DESCRIBE TABLE ${table}`);
    return rows.filter((c) => c.default_type !== 'MATERIALIZED' && c.default_type !== 'ALIAS').map(({ name, type }) => ({ name, type }));
  }

  /** Inserts rows already encoded as RowBinary (row-binary.ts) for `columns`, in order. */
  async insertRowBinary(table: string, columns: readonly Column[], chunks: readonly Buffer[]): Promise<void> {
    if (chunks.length === 0) return;
    const list = columns.map((c) => `\`${c.name}\``).join(', ');
    await this.wrap(`INSERT INTO ${table} (${list})`, async () => {
      const r = await this.client.exec({ query: `INSERT INTO ${table} (${list}) FORMAT RowBinary`, values: Readable.from(chunks) });
      r.stream.resume();
      await finished(r.stream);
    });
  }

  /** True when the server answers /ping. */
  async ping(): Promise<boolean> {
    const r = await this.client.ping().catch(() => ({ success: false }));
    return r.success;
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private async wrap<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      const refused = this.settingError(err);
      if (refused) throw refused;
      const short = what.replace(/\s+/g, ' ').slice(0, 120);
      // The server answered with an exception (its message starts with "Code: N"): not an outage.
      if (
        err instanceof ClickHouseError ||
        /^Code: \d+/.test((err as Error).message ?? '') ||
        (err as { clickhouseCode?: unknown }).clickhouseCode !== undefined
      ) {
        throw new TurnstreamError(ErrorCodes.INTERNAL, `ClickHouse refused "${short}": ${(err as Error).message}`, { cause: err });
      }
      throw new TurnstreamError(
        ErrorCodes.UNAVAILABLE,
        `ClickHouse at ${this.options.url} unavailable (${(err as Error).message}) during "${short}"`,
        {
          cause: err,
        },
      );
    }
  }

  /**
   * A failure no retry can fix, as a TS_ERR_INVALID_INPUT naming the setting: the server refused
   * the user or password (codes 192–194, 516), or its certificate is not trusted.
   */
  private settingError(err: unknown): TurnstreamError | undefined {
    const where = `ClickHouse at ${this.options.url}`;
    const code = Number((err as { code?: unknown }).code ?? /^Code: (\d+)/.exec((err as Error).message ?? '')?.[1]);
    if (LOGIN_REFUSED.has(code)) {
      const p = this.options.password;
      const setting = (p instanceof Secret ? p.setting : 'CLICKHOUSE_PASSWORD').split('=')[0];
      return new TurnstreamError(
        ErrorCodes.INVALID_INPUT,
        `${where} refused the login of user "${this.options.username}" (code ${code}): check CLICKHOUSE_USER and ${setting}`,
        { param: setting, retriable: false, cause: err },
      );
    }
    return untrustedCertificate(err, where, { ...this.options.tls, setting: this.options.tls?.setting ?? 'CLICKHOUSE_CA_FILE' });
  }
}

/** ClickHouse's codes for a login it refuses: UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD, AUTHENTICATION_FAILED. */
const LOGIN_REFUSED = new Set([192, 193, 194, 516]);
