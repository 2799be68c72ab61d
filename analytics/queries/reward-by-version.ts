/**
 * The learning curve: reward per policy version. The judge's majority score of the turns
 * each version answered (what users got), the sample rewards built from them, and what
 * the trainer reported when it published that version.
 */
import type { AnalyticsStore } from '../../warehouse/index.ts';
import { derivedFilter, int, num, r4, type QueryScope } from './scope.ts';

export interface VersionReward {
  policy_version: number;
  /** Judged turns answered by this version. */
  judged: number;
  /** Mean majority score in [-1, 1], null when none judged. */
  mean_score: number | null;
  /** Share of judged turns scored +1. */
  positive_share: number | null;
  samples: number;
  /** Mean sample reward, null when no samples. */
  mean_reward: number | null;
  /** The trainer's mean reward when it published this version; null if not published. */
  trainer_mean_reward: number | null;
  trainer_loss: number | null;
  published_at_ms: number | null;
}

export async function rewardByVersion(store: AnalyticsStore, scope: QueryScope = {}): Promise<VersionReward[]> {
  const t = store.tables;
  const tag = derivedFilter(scope, t.turns);
  const [judged, samples, weights] = await Promise.all([
    store.rows<{ v: number; n: number; mean: number | null; pos: number }>(
      `SELECT policy_version AS v, count() AS n, avg(score) AS mean, countIf(score > 0) AS pos
       FROM ${t.judgements} FINAL WHERE ${tag} GROUP BY v`,
    ),
    store.rows<{ v: number; n: number; mean: number | null }>(
      `SELECT policy_version AS v, count() AS n, avg(reward) AS mean FROM ${t.samples} FINAL WHERE ${tag} GROUP BY v`,
    ),
    store.rows<{ v: number; mean: number; loss: number; at: number }>(
      `SELECT version AS v, avg(mean_reward) AS mean, avg(loss) AS loss, max(created_at_ms) AS at FROM ${t.weights} FINAL GROUP BY v`,
    ),
  ]);
  const out = new Map<number, VersionReward>();
  const at = (v: number): VersionReward => {
    let e = out.get(v);
    if (!e) {
      e = {
        policy_version: v,
        judged: 0,
        mean_score: null,
        positive_share: null,
        samples: 0,
        mean_reward: null,
        trainer_mean_reward: null,
        trainer_loss: null,
        published_at_ms: null,
      };
      out.set(v, e);
    }
    return e;
  };
  for (const r of judged) {
    const e = at(int(r.v));
    e.judged = int(r.n);
    e.mean_score = r4(num(r.mean));
    e.positive_share = e.judged ? r4(int(r.pos) / e.judged) : null;
  }
  for (const r of samples) {
    const e = at(int(r.v));
    e.samples = int(r.n);
    e.mean_reward = r4(num(r.mean));
  }
  for (const r of weights) {
    const e = at(int(r.v));
    e.trainer_mean_reward = r4(num(r.mean));
    e.trainer_loss = r4(num(r.loss));
    e.published_at_ms = int(r.at);
  }
  return [...out.values()].sort((a, b) => a.policy_version - b.policy_version);
}
