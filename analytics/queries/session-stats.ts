/** Per session (most recent first): length, pairs, judged quality, how it ended. */
import { sqlNumber, sqlString, type AnalyticsStore } from '../../warehouse/index.ts';
import { derivedFilter, int, ints, num, r4, turnFilter, type QueryScope } from './scope.ts';

export interface SessionStats {
  session_id: string;
  user_id: string;
  turns: number;
  main: number;
  first_ms: number;
  last_ms: number;
  /** The client marked the session done. */
  done: boolean;
  pairs: number;
  judged: number;
  mean_score: number | null;
}

export interface SessionStatsOptions extends QueryScope {
  /** @default 50 */
  limit?: number;
  /** Only this user's sessions. */
  userId?: string;
}

export async function sessionStats(store: AnalyticsStore, o: SessionStatsOptions = {}): Promise<SessionStats[]> {
  const t = store.tables;
  const limit = sqlNumber(Math.max(1, Math.floor(o.limit ?? 50)));
  const where = `WHERE ${turnFilter(o)}${o.userId === undefined ? '' : ` AND user_id = ${sqlString(o.userId)}`}`;
  const sessions = await store.rows<Record<string, number | string>>(`
    SELECT session_id, any(user_id) AS session_user, count() AS turns, countIf(turn_type = 'MAIN') AS main,
      min(requested_at_ms) AS first_ms, max(completed_at_ms) AS last_ms, max(session_done) AS done
    FROM ${t.turns} FINAL ${where} GROUP BY session_id ORDER BY last_ms DESC LIMIT ${limit}`);
  if (sessions.length === 0) return [];
  const ids = `(${sessions.map((s) => sqlString(String(s.session_id))).join(', ')})`;
  const [pairs, judged] = await Promise.all([
    store.rows<Record<string, number | string>>(
      `SELECT session_id, count() AS n FROM ${t.pairs} FINAL WHERE ${derivedFilter(o, t.turns, 'pair_id')} AND session_id IN ${ids} GROUP BY session_id`,
    ),
    store.rows<Record<string, number | string | null>>(
      `SELECT session_id, uniqExact(turn_id) AS n, avg(score) AS mean FROM ${t.judgements} FINAL WHERE ${derivedFilter(o, t.turns)} AND session_id IN ${ids} GROUP BY session_id`,
    ),
  ]);
  const p = new Map(pairs.map((r) => [String(r.session_id), r]));
  const j = new Map(judged.map((r) => [String(r.session_id), r]));
  return sessions.map((s) => {
    const id = String(s.session_id);
    return {
      session_id: id,
      user_id: String(s.session_user),
      ...ints(s, ['turns', 'main', 'first_ms', 'last_ms']),
      done: int(s.done) > 0,
      pairs: int(p.get(id)?.n),
      judged: int(j.get(id)?.n),
      mean_score: r4(num(j.get(id)?.mean)),
    };
  });
}
