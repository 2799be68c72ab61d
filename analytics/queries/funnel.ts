/**
 * The funnel of the learning loop, each stage a subset of the one before:
 *
 * - turns:   every turn the gateway recorded (in the scope: live, imported, or all for a replay)
 * - main:    turns of type MAIN (side turns are never trained on)
 * - pairs:   main turns paired with their next state
 * - judged:  pairs with at least one judgement (distinct turn ids)
 * - samples: training samples built from judged pairs
 * - trained: samples a published weight version has consumed, defined as: the model has a
 *            published version newer than the sample's policyVersion, published at or after
 *            the sample's createdAt. (A sample from an old policy that arrives after the
 *            newest version is waiting, not trained.)
 * - trained_reported: what the trainer itself reports, Σ metrics.samples over published
 *            versions; it counts training passes, so it can differ from `trained`.
 */
import type { AnalyticsStore } from '../../warehouse/index.ts';
import { derivedFilter, ints, turnFilter, type QueryScope } from './scope.ts';

export interface Funnel {
  turns: number;
  main: number;
  pairs: number;
  judged: number;
  samples: number;
  trained: number;
  trained_reported: number;
}

export async function funnel(store: AnalyticsStore, scope: QueryScope = {}): Promise<Funnel> {
  const t = store.tables;
  const tag = derivedFilter(scope, t.turns);
  const turns = turnFilter(scope);
  const [r] = await store.rows<Record<keyof Funnel, number>>(`
    SELECT
      (SELECT count() FROM ${t.turns} FINAL WHERE ${turns}) AS turns,
      (SELECT count() FROM ${t.turns} FINAL WHERE turn_type = 'MAIN' AND ${turns}) AS main,
      (SELECT count() FROM ${t.pairs} FINAL WHERE ${derivedFilter(scope, t.turns, 'pair_id')}) AS pairs,
      (SELECT uniqExact(turn_id) FROM ${t.judgements} FINAL WHERE ${tag}) AS judged,
      (SELECT count() FROM ${t.samples} FINAL WHERE ${tag}) AS samples,
      (SELECT count() FROM (SELECT policy_model_id, policy_version, created_at_ms FROM ${t.samples} FINAL WHERE ${tag}) AS s
         ALL INNER JOIN (SELECT model_id AS policy_model_id, max(version) AS latest_version, max(created_at_ms) AS latest_at
                         FROM ${t.weights} FINAL GROUP BY model_id) AS w USING policy_model_id
         WHERE policy_version < latest_version AND created_at_ms <= latest_at) AS trained,
      (SELECT sum(samples) FROM ${t.weights} FINAL) AS trained_reported`);
  return ints(r, ['turns', 'main', 'pairs', 'judged', 'samples', 'trained', 'trained_reported']);
}
