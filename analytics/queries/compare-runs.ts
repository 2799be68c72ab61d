/**
 * Two runs side by side: the live pipeline and a replay, or two replays (another judge, other
 * settings, the same history). Per run: pairs, judged turns, samples and the judge's score
 * distribution; across runs: the turns both judged and how often their scores agree.
 */
import { sqlString, type AnalyticsStore } from '../../warehouse/index.ts';
import { int, ints, num, r4 } from './scope.ts';

export interface RunStats {
  /** Replay tag; '' = the live pipeline. */
  tag: string;
  pairs: number;
  judgements: number;
  /** Distinct judged turns. */
  judged: number;
  samples: number;
  /** Judgements by majority score. */
  positive: number;
  neutral: number;
  negative: number;
  /** Mean majority score in [-1, 1]; null when nothing was judged. */
  mean_score: number | null;
  /** Mean sample reward; null without samples. */
  mean_reward: number | null;
  /** Judge ids of the run's judgements, sorted. */
  judge_ids: string[];
}

export interface RunComparison {
  a: RunStats;
  b: RunStats;
  /** Turns judged in both runs. */
  both_judged: number;
  /** …whose (mean) score is the same in both. */
  same_score: number;
  /** same_score / both_judged; null when no turn was judged in both. */
  agreement: number | null;
}

export interface CompareRunsOptions {
  /** First run's tag. @default '' (live) */
  a?: string;
  /** Second run's tag. */
  b: string;
}

async function runStats(store: AnalyticsStore, tag: string): Promise<RunStats> {
  const t = store.tables;
  const where = `replay_tag = ${sqlString(tag)}`;
  const [r] = await store.rows<Record<string, unknown>>(`
    SELECT
      (SELECT count() FROM ${t.pairs} FINAL WHERE ${where}) AS pairs,
      (SELECT count() FROM ${t.judgements} FINAL WHERE ${where}) AS judgements,
      (SELECT uniqExact(turn_id) FROM ${t.judgements} FINAL WHERE ${where}) AS judged,
      (SELECT countIf(score > 0) FROM ${t.judgements} FINAL WHERE ${where}) AS pos,
      (SELECT countIf(score = 0) FROM ${t.judgements} FINAL WHERE ${where}) AS neu,
      (SELECT countIf(score < 0) FROM ${t.judgements} FINAL WHERE ${where}) AS neg,
      (SELECT avg(score) FROM ${t.judgements} FINAL WHERE ${where}) AS mean_score,
      (SELECT groupUniqArray(judge_id) FROM ${t.judgements} FINAL WHERE ${where}) AS judge_ids,
      (SELECT count() FROM ${t.samples} FINAL WHERE ${where}) AS samples,
      (SELECT avg(reward) FROM ${t.samples} FINAL WHERE ${where}) AS mean_reward`);
  return {
    tag,
    ...ints(r, ['pairs', 'judgements', 'judged', 'samples']),
    positive: int(r?.pos),
    neutral: int(r?.neu),
    negative: int(r?.neg),
    mean_score: r4(num(r?.mean_score)),
    mean_reward: r4(num(r?.mean_reward)),
    judge_ids: ((r?.judge_ids as string[] | undefined) ?? []).slice().sort(),
  };
}

export async function compareRuns(store: AnalyticsStore, o: CompareRunsOptions): Promise<RunComparison> {
  const a = o.a ?? '';
  const per = (tag: string): string =>
    `SELECT turn_id, avg(score) AS s FROM ${store.tables.judgements} FINAL WHERE replay_tag = ${sqlString(tag)} GROUP BY turn_id`;
  const [sa, sb, [overlap]] = await Promise.all([
    runStats(store, a),
    runStats(store, o.b),
    // ANY INNER JOIN … USING with aliased subqueries: a form 18.16 and current servers both read the
    // same way (one row per turn id on each side, so ANY and ALL agree).
    store.rows<{ both: number; same: number }>(`
      SELECT count() AS both, countIf(sa = sb) AS same
      FROM (SELECT turn_id, s AS sa FROM (${per(a)})) AS ra ANY INNER JOIN (SELECT turn_id, s AS sb FROM (${per(o.b)})) AS rb USING turn_id`),
  ]);
  const both = int(overlap?.both);
  const same = int(overlap?.same);
  return { a: sa, b: sb, both_judged: both, same_score: same, agreement: both ? r4(same / both) : null };
}
