/** What a query looks at: the live pipeline by default, or one replay tag. */
import { sqlString } from '../sql.ts';

export interface QueryScope {
  /** Replay tag of pairs, judgements, samples and dead letters; '' = the live pipeline. @default '' */
  tag?: string;
}

/**
 * `replay_tag = '…'` for the tables a replay writes to. `replay_tag` is the tag of the topic
 * the row was read from and part of the row's key (migration 2), so a live row and a replayed
 * row of the same id are two rows, each counted in its own scope only.
 */
export const tagFilter = (scope: QueryScope = {}): string => `replay_tag = ${sqlString(scope.tag ?? '')}`;

/** ClickHouse returns null for aggregates over no rows (and NaN); this keeps numbers or null. */
export const num = (v: unknown): number | null => (v === null || v === undefined || Number.isNaN(Number(v)) ? null : Number(v));
export const int = (v: unknown): number => Number(v ?? 0) || 0;
/** Rounds for display and JSON (4 decimals keeps means and shares readable). */
export const r4 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1e4) / 1e4);
