/** Dead letters grouped by the stage that gave up and the error code, newest message kept. */
import type { AnalyticsStore } from '../../warehouse/index.ts';
import { int, tagFilter, type QueryScope } from './scope.ts';

export interface DlqReason {
  stage: string;
  code: string;
  count: number;
  /** Source topics of the failed records. */
  topics: string[];
  last_failed_at_ms: number;
  last_message: string;
}

/** Dead letters of the live pipeline, or of one replay's tagged DLQ topic (`scope.tag`). */
export async function dlqByReason(store: AnalyticsStore, scope: QueryScope = {}): Promise<DlqReason[]> {
  const rows = await store.rows<Record<string, unknown>>(`
    SELECT stage, code, count() AS n, groupUniqArray(topic) AS topics, max(failed_at_ms) AS last_at,
      argMax(message, failed_at_ms) AS last_message
    FROM ${store.tables.dlq} FINAL WHERE ${tagFilter(scope)} GROUP BY stage, code ORDER BY n DESC, stage, code`);
  return rows.map((r) => ({
    stage: String(r.stage),
    code: String(r.code),
    count: int(r.n),
    topics: ((r.topics as string[]) ?? []).slice().sort(),
    last_failed_at_ms: int(r.last_at),
    last_message: String(r.last_message ?? ''),
  }));
}
