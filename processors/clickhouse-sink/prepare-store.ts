/**
 * Before the sink reads anything: the analytics tables migrated, and the insertable columns of
 * each table it writes handed to the row buffer (rows are encoded as RowBinary as they arrive).
 * ClickHouse may be starting: both are retried instead of failing the service.
 */
import { migrateWhenReady, TABLE_OF, type AnalyticsStore } from '../../warehouse/index.ts';
import type { TopicId } from '../../schemas/index.ts';
import { isRetriable, retry, type Logger } from '../../core/index.ts';
import type { RowBuffer } from './row-buffer.ts';

export interface PrepareStoreOptions {
  /** The topics stored (their tables are prepared). */
  ids: readonly TopicId[];
  baseMs: number;
  maxMs: number;
  /** True once the sink is stopping: retrying ends. */
  stopping: () => boolean;
  logger: Logger;
}

export async function prepareStore(store: AnalyticsStore, buffer: RowBuffer, o: PrepareStoreOptions): Promise<void> {
  const { baseMs, maxMs, logger: log } = o;
  const r = await migrateWhenReady(store, { baseMs, maxMs, stopping: o.stopping, logger: log });
  log.info({ applied: r.applied, version: r.version, server: r.server, database: store.options.database }, 'analytics schema ready');
  for (const table of new Set(o.ids.map((id) => TABLE_OF[id]!))) {
    buffer.setColumns(
      table,
      await retry(() => store.columns(store.tables[table]), { baseMs, maxMs, retryIf: (err) => !o.stopping() && isRetriable(err) }),
    );
  }
}
