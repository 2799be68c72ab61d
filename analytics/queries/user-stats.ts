/** Per user: activity, judged quality and explicit feedback. Anonymous turns are user ''. */
import { sqlNumber, type AnalyticsStore } from '../../warehouse/index.ts';
import { derivedFilter, int, ints, num, r4, turnFilter, type QueryScope } from './scope.ts';

export interface UserStats {
  user_id: string;
  sessions: number;
  turns: number;
  main: number;
  tokens: number;
  first_ms: number;
  last_ms: number;
  judged: number;
  mean_score: number | null;
  thumbs_up: number;
  thumbs_down: number;
}

export interface UserStatsOptions extends QueryScope {
  /** The most active users only. @default 50 */
  limit?: number;
}

export async function userStats(store: AnalyticsStore, o: UserStatsOptions = {}): Promise<UserStats[]> {
  const t = store.tables;
  const limit = sqlNumber(Math.max(1, Math.floor(o.limit ?? 50)));
  // Three small aggregates merged here: plainer on old servers than a three-way join.
  const [turns, judged, feedback] = await Promise.all([
    store.rows<Record<string, number | string>>(`
      SELECT user_id, uniqExact(session_id) AS sessions, count() AS turns, countIf(turn_type = 'MAIN') AS main,
        sum(total_tokens) AS tokens, min(requested_at_ms) AS first_ms, max(completed_at_ms) AS last_ms
      FROM ${t.turns} FINAL WHERE ${turnFilter(o)} GROUP BY user_id ORDER BY turns DESC LIMIT ${limit}`),
    store.rows<Record<string, number | string | null>>(
      `SELECT user_id, uniqExact(turn_id) AS judged, avg(score) AS mean FROM ${t.judgements} FINAL WHERE ${derivedFilter(o, t.turns)} GROUP BY user_id`,
    ),
    store.rows<Record<string, number | string>>(
      `SELECT user_id, countIf(has_rating AND rating > 0) AS up, countIf(has_rating AND rating < 0) AS down FROM ${t.feedback} FINAL GROUP BY user_id`,
    ),
  ]);
  const j = new Map(judged.map((r) => [String(r.user_id), r]));
  const f = new Map(feedback.map((r) => [String(r.user_id), r]));
  return turns.map((r) => {
    const id = String(r.user_id);
    return {
      user_id: id,
      ...ints(r, ['sessions', 'turns', 'main', 'tokens', 'first_ms', 'last_ms']),
      judged: int(j.get(id)?.judged),
      mean_score: r4(num(j.get(id)?.mean)),
      thumbs_up: int(f.get(id)?.up),
      thumbs_down: int(f.get(id)?.down),
    };
  });
}
