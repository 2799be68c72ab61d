/** Analytics: ClickHouse DDL and queries, the dashboard service and the report. */
export { resolveAnalyticsOptions, type AnalyticsOptions, type ResolvedAnalyticsOptions } from './options.ts';
export { AnalyticsStore } from './store.ts';
export { tableNames, TABLE_IDS, type TableId, type Tables } from './tables.ts';
export { migrate, MIGRATIONS, type Migration, type MigrationResult } from './migrations.ts';
export { toRow, TABLE_OF, type MappedRow, type Row, type SourcePosition } from './rows.ts';
export { sqlString, sqlNumber } from './sql.ts';
export { funnel, type Funnel } from './queries/funnel.ts';
export { rewardByVersion, type VersionReward } from './queries/reward-by-version.ts';
export { rewardOverTime, type RewardPoint, type RewardOverTimeOptions } from './queries/reward-over-time.ts';
export { judgeStats, type JudgeStats } from './queries/judge-stats.ts';
export { latencyPercentiles, type LatencyStats } from './queries/latency.ts';
export { userStats, type UserStats, type UserStatsOptions } from './queries/user-stats.ts';
export { sessionStats, type SessionStats, type SessionStatsOptions } from './queries/session-stats.ts';
export { dlqByReason, type DlqReason } from './queries/dlq-by-reason.ts';
export type { QueryScope } from './queries/scope.ts';
export { overview, type Overview, type OverviewOptions } from './overview.ts';
export { formatReport } from './report.ts';
export { buildDashboardApp, startDashboard, type DashboardHandle, type DashboardOptions } from './dashboard/server.ts';
