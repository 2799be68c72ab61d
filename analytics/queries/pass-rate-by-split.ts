/**
 * A model's verifier pass rates per policy version and split (TRAIN, DEV, TEST; EVAL in runs from
 * before the dev split), and the pass rate of each named part of the verdicts (`parts`, e.g.
 * content and format), from the rewards table.
 */
import { sqlString, type AnalyticsStore } from '../../warehouse/index.ts';
import { int, num, r4 } from './scope.ts';

export interface SplitPassRate {
  policy_version: number;
  split: string;
  rollouts: number;
  /** Share of the rollouts with a verdict that passed; null when none has one. */
  pass_rate: number | null;
  mean_reward: number | null;
  /** Per named part of the verdicts, the share of the rollouts that have it which passed it. */
  parts: Record<string, number>;
}

/** The order splits are listed in; any other after them, by name. */
const SPLITS = ['TRAIN', 'DEV', 'TEST', 'EVAL'];
const splitRank = (s: string): number => (SPLITS.includes(s) ? SPLITS.indexOf(s) : SPLITS.length);

/** Rollouts whose serving version is unknown (-1: no call of theirs answered) are left out. */
export async function passRateBySplit(store: AnalyticsStore, modelId: string): Promise<SplitPassRate[]> {
  // Grouped by the parts' JSON too: a verdict has few parts, so few distinct values; they are
  // counted out here (ClickHouse 18.16 has no JSON functions that list an object's keys).
  const rows = await store.rows<{ v: unknown; split: string; parts: string; n: unknown; judged: unknown; held: unknown; rsum: unknown }>(`
    SELECT policy_version AS v, split, parts, count() AS n, countIf(passed >= 0) AS judged, countIf(passed = 1) AS held, sum(reward) AS rsum
    FROM ${store.tables.rewards} FINAL WHERE policy_model_id = ${sqlString(modelId)} AND split != '' AND policy_version >= 0
    GROUP BY v, split, parts`);
  const acc = new Map<
    string,
    { v: number; split: string; n: number; judged: number; passed: number; rsum: number; parts: Map<string, [number, number]> }
  >();
  for (const r of rows) {
    const v = int(r.v);
    const key = `${v}\u0000${r.split}`;
    const a = acc.get(key) ?? { v, split: r.split, n: 0, judged: 0, passed: 0, rsum: 0, parts: new Map<string, [number, number]>() };
    const n = int(r.n);
    a.n += n;
    a.judged += int(r.judged);
    a.passed += int(r.held);
    a.rsum += num(r.rsum) ?? 0;
    for (const [name, held] of Object.entries(partsOf(r.parts))) {
      const p = a.parts.get(name) ?? [0, 0];
      p[0] += held ? n : 0;
      p[1] += n;
      a.parts.set(name, p);
    }
    acc.set(key, a);
  }
  return [...acc.values()]
    .map((a) => ({
      policy_version: a.v,
      split: a.split,
      rollouts: a.n,
      pass_rate: a.judged ? r4(a.passed / a.judged) : null,
      mean_reward: a.n ? r4(a.rsum / a.n) : null,
      parts: Object.fromEntries(
        [...a.parts].sort(([x], [y]) => x.localeCompare(y)).map(([name, [held, of]]) => [name, r4(held / of) ?? 0]),
      ),
    }))
    .sort((a, b) => a.policy_version - b.policy_version || splitRank(a.split) - splitRank(b.split) || a.split.localeCompare(b.split));
}

/** `{"content":true,"format":false}` → the same object; '' (no parts: rows from before migration 4) → {}. */
function partsOf(json: string): Record<string, boolean> {
  if (!json) return {};
  try {
    const v = JSON.parse(json) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
    return Object.fromEntries(Object.entries(v).filter((e): e is [string, boolean] => typeof e[1] === 'boolean'));
  } catch {
    return {};
  }
}
