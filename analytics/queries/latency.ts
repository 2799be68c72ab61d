/** Gateway latency percentiles per turn type (and all turns), from the turns table: live turns only by default. */
import type { AnalyticsStore } from '../../warehouse/index.ts';
import { int, num, r4, turnFilter, type QueryScope } from './scope.ts';

export interface LatencyStats {
  /** MAIN, SIDE or ALL. */
  turn_type: string;
  turns: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

export async function latencyPercentiles(store: AnalyticsStore, scope: QueryScope = {}): Promise<LatencyStats[]> {
  const t = store.tables.turns;
  const sel = `count() AS n, quantiles(0.5, 0.9, 0.99)(latency_ms) AS q, max(latency_ms) AS mx, avg(latency_ms) AS mean`;
  const [byType, all] = await Promise.all([
    store.rows<Record<string, unknown>>(
      `SELECT turn_type, ${sel} FROM ${t} FINAL WHERE ${turnFilter(scope)} GROUP BY turn_type ORDER BY turn_type`,
    ),
    store.rows<Record<string, unknown>>(`SELECT 'ALL' AS turn_type, ${sel} FROM ${t} FINAL WHERE ${turnFilter(scope)}`),
  ]);
  return [...byType, ...all]
    .filter((r) => int(r.n) > 0)
    .map((r) => {
      const q = (r.q as Array<number | null>) ?? [];
      return {
        turn_type: String(r.turn_type),
        turns: int(r.n),
        p50: r4(num(q[0])),
        p90: r4(num(q[1])),
        p99: r4(num(q[2])),
        max: r4(num(r.mx)),
        mean: r4(num(r.mean)),
      };
    });
}
