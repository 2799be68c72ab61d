/**
 * The analytics tables migrated, with ClickHouse perhaps still starting: a retriable failure
 * (connection refused, a 5xx) is retried with backoff through core's one retrier, anything else
 * surfaces. The sink does this before it reads; the dashboard before it serves.
 */
import { retry, toTurnstreamError, type Logger } from '../core/index.ts';
import type { AnalyticsStore } from './client.ts';
import { migrate, type MigrationResult } from './migrations.ts';

export interface MigrateWhenReadyOptions {
  /** First delay between attempts, ms (doubles up to `maxMs`). @default 250 */
  baseMs?: number;
  /** @default 5000 */
  maxMs?: number;
  /** Attempts in all. @default Infinity */
  attempts?: number;
  /** True once the caller is stopping: retrying ends, and the last error is thrown as it came. */
  stopping?: () => boolean;
  logger?: Pick<Logger, 'warn'>;
}

/** `migrate(store)`, retried while ClickHouse is not ready. @throws TurnstreamError the last failure (coded) */
export async function migrateWhenReady(store: AnalyticsStore, o: MigrateWhenReadyOptions = {}): Promise<MigrationResult> {
  const stopping = o.stopping ?? (() => false);
  return retry(() => migrate(store), {
    baseMs: o.baseMs ?? 250,
    maxMs: o.maxMs ?? 5000,
    attempts: o.attempts,
    retryIf: (err) => !stopping() && toTurnstreamError(err).retriable,
    onRetry: (err, attempt) => o.logger?.warn({ err: (err as Error).message, attempt }, 'ClickHouse not ready; retrying'),
  }).catch((err: unknown) => {
    throw stopping() ? err : toTurnstreamError(err);
  });
}
