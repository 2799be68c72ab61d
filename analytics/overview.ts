/** Everything the dashboard and `turnstream report` show, in one call. */
import { dlqByReason, type DlqReason } from './queries/dlq-by-reason.ts';
import { funnel, type Funnel } from './queries/funnel.ts';
import { judgeStats, type JudgeStats } from './queries/judge-stats.ts';
import { latencyPercentiles, type LatencyStats } from './queries/latency.ts';
import { rewardByVersion, type VersionReward } from './queries/reward-by-version.ts';
import { rewardOverTime, type RewardPoint } from './queries/reward-over-time.ts';
import type { QueryScope, TurnSource } from './queries/scope.ts';
import { sessionStats, type SessionStats } from './queries/session-stats.ts';
import { userStats, type UserStats } from './queries/user-stats.ts';
import type { AnalyticsStore } from '../warehouse/index.ts';

export interface Overview {
  generated_at_ms: number;
  /** The replay tag shown; '' (or absent) = the live pipeline. Turns, feedback and weights are shared. */
  tag?: string;
  /** Without a tag: whose turns the figures are of, live traffic or imported history. */
  source: TurnSource;
  funnel: Funnel;
  /** In the live overview: imported history's own funnel (never part of the live figures); null when none was imported. */
  imported: Funnel | null;
  reward_by_version: VersionReward[];
  reward_over_time: RewardPoint[];
  judges: JudgeStats[];
  latency: LatencyStats[];
  users: UserStats[];
  sessions: SessionStats[];
  dlq: DlqReason[];
}

export interface OverviewOptions extends QueryScope {
  /** Bucket of the reward-over-time curve. @default 60000 */
  bucketMs?: number;
}

export async function overview(store: AnalyticsStore, o: OverviewOptions = {}): Promise<Overview> {
  const source: TurnSource = o.tag ? 'live' : (o.source ?? 'live');
  const [f, imported, rv, rt, j, l, u, s, d] = await Promise.all([
    funnel(store, o),
    !o.tag && source === 'live' ? funnel(store, { source: 'imported' }) : null,
    rewardByVersion(store, o),
    rewardOverTime(store, { ...o, bucketMs: o.bucketMs }),
    judgeStats(store, o),
    latencyPercentiles(store, o),
    userStats(store, o),
    sessionStats(store, o),
    dlqByReason(store, o),
  ]);
  return {
    generated_at_ms: Date.now(),
    tag: o.tag ?? '',
    source,
    funnel: f,
    imported: imported && imported.turns > 0 ? imported : null,
    reward_by_version: rv,
    reward_over_time: rt,
    judges: j,
    latency: l,
    users: u,
    sessions: s,
    dlq: d,
  };
}
