/** What a query looks at: the live pipeline by default, or one replay tag. */
import { sqlString } from '../sql.ts';

export interface QueryScope {
  /** Replay tag of pairs, judgements and samples; '' = the live pipeline. @default '' */
  tag?: string;
}

/** `tag = '…'` for the derived tables. */
export const tagFilter = (scope: QueryScope = {}): string => `tag = ${sqlString(scope.tag ?? '')}`;

/** ClickHouse returns null for aggregates over no rows (and NaN); this keeps numbers or null. */
export const num = (v: unknown): number | null => (v === null || v === undefined || Number.isNaN(Number(v)) ? null : Number(v));
export const int = (v: unknown): number => Number(v ?? 0) || 0;
/** Rounds for display and JSON (4 decimals keeps means and shares readable). */
export const r4 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1e4) / 1e4);
