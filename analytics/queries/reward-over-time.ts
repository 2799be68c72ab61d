/** Mean judged score per time bucket (by judgement time): the learning curve in wall-clock time. */
import { sqlNumber, type AnalyticsStore } from '../../warehouse/index.ts';
import { derivedFilter, int, num, r4, type QueryScope } from './scope.ts';

export interface RewardPoint {
  /** Bucket start, epoch ms. */
  t: number;
  judged: number;
  mean_score: number | null;
  /** Newest policy version judged in the bucket. */
  policy_version: number;
}

export interface RewardOverTimeOptions extends QueryScope {
  /** Bucket width in ms. @default 60000 */
  bucketMs?: number;
  /** The most recent buckets only. @default 240 */
  limit?: number;
}

export async function rewardOverTime(store: AnalyticsStore, o: RewardOverTimeOptions = {}): Promise<RewardPoint[]> {
  const bucket = sqlNumber(Math.max(1, Math.floor(o.bucketMs ?? 60000)));
  const limit = sqlNumber(Math.max(1, Math.floor(o.limit ?? 240)));
  const rows = await store.rows<{ t: number; n: number; mean: number | null; v: number }>(`
    SELECT intDiv(created_at_ms, ${bucket}) * ${bucket} AS t, count() AS n, avg(score) AS mean, max(policy_version) AS v
    FROM ${store.tables.judgements} FINAL WHERE ${derivedFilter(o, store.tables.turns)}
    GROUP BY t ORDER BY t DESC LIMIT ${limit}`);
  return rows.map((r) => ({ t: int(r.t), judged: int(r.n), mean_score: r4(num(r.mean)), policy_version: int(r.v) })).reverse();
}
