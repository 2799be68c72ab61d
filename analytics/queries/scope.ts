/**
 * What a query looks at: the live pipeline by default, imported history (`source: 'imported'`),
 * or one replay tag. Live figures never include imported turns (their latency is not a gateway's,
 * and they are not live traffic) nor what was derived from them; replays have tags of their own.
 */
import { sqlString } from '../../warehouse/index.ts';

/** Where turns came from: served by a gateway (`live`) or `turnstream import` (`imported`). */
export type TurnSource = 'live' | 'imported';

export interface QueryScope {
  /** Replay tag of pairs, judgements, samples and dead letters; '' = the live pipeline. @default '' */
  tag?: string;
  /** Without a tag: live turns, or imported history. @default 'live' */
  source?: TurnSource;
}

/** Turns (the turns table) in scope. A replay's scope has every turn: it reads the shared history. */
export const turnFilter = (scope: QueryScope = {}): string =>
  scope.tag ? '1' : scope.source === 'imported' ? `session_source = 'IMPORTED'` : `session_source != 'IMPORTED'`;

/**
 * Rows of a table derived from turns (pairs, judgements, samples) in scope: the replay tag, and
 * without one, the rows of live turns only, or of imported turns only (`idColumn` holds the turn id).
 */
export function derivedFilter(scope: QueryScope, turnsTable: string, idColumn = 'turn_id'): string {
  if (scope.tag) return tagFilter(scope);
  const imported = `(SELECT turn_id FROM ${turnsTable} WHERE session_source = 'IMPORTED')`;
  return `${tagFilter(scope)} AND ${idColumn} ${scope.source === 'imported' ? 'IN' : 'NOT IN'} ${imported}`;
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
/** `int` of each of `keys` of a row, in that order (no row: all 0). */
export const ints = <K extends string>(r: Partial<Record<K, unknown>> | undefined, keys: readonly K[]): Record<K, number> =>
  Object.fromEntries(keys.map((k) => [k, int(r?.[k])])) as Record<K, number>;
/** Rounds for display and JSON (4 decimals keeps means and shares readable). */
export const r4 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1e4) / 1e4);
