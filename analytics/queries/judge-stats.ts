/**
 * Per judge: how often its votes agree with the majority (agreement = valid votes equal to
 * the majority score / valid votes), how often votes fail (no score: timeout, garbage,
 * error), the score distribution and vote latency.
 */
import type { AnalyticsStore } from '../../warehouse/index.ts';
import { derivedFilter, int, num, r4, type QueryScope } from './scope.ts';

export interface JudgeStats {
  judge_id: string;
  judgements: number;
  votes: number;
  votes_valid: number;
  votes_failed: number;
  /** votes_agree / votes_valid; null with no valid vote. */
  agreement: number | null;
  /** votes_failed / votes. */
  failure_rate: number | null;
  /** Judgements that asked for votes and got no valid one (every vote failed). */
  all_failed: number;
  /** Judgements with nothing to judge (no next state, no feedback): no vote was asked. */
  no_votes: number;
  positive: number;
  neutral: number;
  negative: number;
  hint_share: number | null;
  vote_latency_ms_avg: number | null;
  vote_latency_ms_p90: number | null;
}

export async function judgeStats(store: AnalyticsStore, scope: QueryScope = {}): Promise<JudgeStats[]> {
  const rows = await store.rows<Record<string, number | string | null>>(`
    SELECT judge_id, count() AS judgements, sum(votes) AS votes_sum, sum(votes_valid) AS valid, sum(votes_failed) AS failed,
      sum(votes_agree) AS agree, countIf(votes > 0 AND votes_valid = 0) AS all_failed, countIf(votes = 0) AS no_votes,
      countIf(score > 0) AS pos, countIf(score = 0) AS neu, countIf(score < 0) AS neg, avg(has_hint) AS hints,
      avg(vote_latency_ms_avg) AS lat, quantile(0.9)(vote_latency_ms_avg) AS lat90
    FROM ${store.tables.judgements} FINAL WHERE ${derivedFilter(scope, store.tables.turns)}
    GROUP BY judge_id ORDER BY judgements DESC`);
  return rows.map((r) => {
    const votes = int(r.votes_sum);
    const valid = int(r.valid);
    return {
      judge_id: String(r.judge_id),
      judgements: int(r.judgements),
      votes,
      votes_valid: valid,
      votes_failed: int(r.failed),
      agreement: valid ? r4(int(r.agree) / valid) : null,
      failure_rate: votes ? r4(int(r.failed) / votes) : null,
      all_failed: int(r.all_failed),
      no_votes: int(r.no_votes),
      positive: int(r.pos),
      neutral: int(r.neu),
      negative: int(r.neg),
      hint_share: r4(num(r.hints)),
      vote_latency_ms_avg: r4(num(r.lat)),
      vote_latency_ms_p90: r4(num(r.lat90)),
    };
  });
}
