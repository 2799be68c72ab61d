/** Analytics: the queries, the report and the dashboard service, on the ClickHouse store (warehouse/). */
export { funnel, type Funnel } from './queries/funnel.ts';
export { rewardByVersion, type VersionReward } from './queries/reward-by-version.ts';
export { passRateByVersion, type VersionPassRate } from './queries/pass-rate-by-version.ts';
export { passRateBySplit, type SplitPassRate } from './queries/pass-rate-by-split.ts';
export { trainingByVersion, trainingModels, type TrainingModel, type VersionTraining } from './queries/training-by-version.ts';
export { rewardOverTime, type RewardPoint, type RewardOverTimeOptions } from './queries/reward-over-time.ts';
export { judgeStats, type JudgeStats } from './queries/judge-stats.ts';
export { latencyPercentiles, type LatencyStats } from './queries/latency.ts';
export { userStats, type UserStats, type UserStatsOptions } from './queries/user-stats.ts';
export { sessionStats, type SessionStats, type SessionStatsOptions } from './queries/session-stats.ts';
export { dlqByReason, type DlqReason } from './queries/dlq-by-reason.ts';
export type { QueryScope, TurnSource } from './queries/scope.ts';
export { overview, type Overview, type OverviewOptions } from './overview.ts';
export { buildReport, formatComparison, formatReport, type ReportOptions } from './report.ts';
export { compareRuns, type CompareRunsOptions, type RunComparison, type RunStats } from './queries/compare-runs.ts';
export { listRuns, type RunSummary } from './queries/runs.ts';
export { buildDashboardApp, startDashboard, type DashboardHandle, type DashboardOptions } from './dashboard/server.ts';
