/**
 * Learning from tasks: the verifier's pass rate per model and policy version (from the rewards
 * table), held-out (EVAL) and train (TRAIN) rollouts apart, with how many rollouts each is over.
 */
import type { AnalyticsStore } from '../../warehouse/index.ts';
import { int, num, r4 } from './scope.ts';

export interface VersionPassRate {
  policy_model_id: string;
  policy_version: number;
  suite: string;
  split: string;
  rollouts: number;
  /** Share of rollouts that passed. */
  pass_rate: number | null;
  mean_reward: number | null;
  last_ms: number;
}

export async function passRateByVersion(store: AnalyticsStore, opts: { limit?: number } = {}): Promise<VersionPassRate[]> {
  const t = store.tables;
  const rows = await store.rows<{
    m: string;
    v: number;
    suite: string;
    split: string;
    n: number;
    pass: number | null;
    mean: number | null;
    last: number;
  }>(
    `SELECT policy_model_id AS m, policy_version AS v, suite, split, count() AS n, avgIf(passed, passed >= 0) AS pass, avg(reward) AS mean,
            max(created_at_ms) AS last
     FROM ${t.rewards} FINAL WHERE split != '' GROUP BY m, v, suite, split ORDER BY last DESC LIMIT ${Math.max(1, Math.min(10_000, opts.limit ?? 500))}`,
  );
  return rows
    .map((r) => ({
      policy_model_id: r.m,
      policy_version: int(r.v),
      suite: r.suite,
      split: r.split,
      rollouts: int(r.n),
      pass_rate: r4(num(r.pass)),
      mean_reward: r4(num(r.mean)),
      last_ms: int(r.last),
    }))
    .sort((a, b) =>
      a.policy_model_id < b.policy_model_id ? -1 : a.policy_model_id > b.policy_model_id ? 1 : a.policy_version - b.policy_version,
    );
}
