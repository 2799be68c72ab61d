/**
 * The analytics store, the low level of analytics: the ClickHouse client of one database and
 * prefix, the tables and their migrations (DDL), events → rows, and RowBinary. What the
 * ClickHouse sink writes with; the queries, the report and the dashboard (analytics/) read
 * through it.
 */
export { migrateWhenReady, type MigrateWhenReadyOptions } from './migrate-when-ready.ts';
export { ANALYTICS_DEFAULTS, resolveAnalyticsOptions, type AnalyticsOptions, type ResolvedAnalyticsOptions } from './options.ts';
export { AnalyticsStore } from './client.ts';
export { tableNames, TABLE_IDS, REPLAY_KEYS, type TableId, type Tables } from './tables.ts';
export { migrate, MIGRATIONS, type Migration, type MigrationResult } from './migrations.ts';
export { RowBinaryEncoder, type Column } from './row-binary.ts';
export { toRow, TABLE_OF, REPLAY_TABLES, type MappedRow, type Row, type SourcePosition } from './rows.ts';
export { sqlString, sqlNumber } from './sql.ts';
