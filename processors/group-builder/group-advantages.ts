/**
 * GRPO advantages (docs/design/algorithms.md §9): rollout i of a group gets
 * A_i = r_i − mean(r), divided by the group's standard deviation unless `normalizeStd` is off
 * (Dr. GRPO's choice). A group whose rewards are all equal carries no signal: null.
 */

/** The advantages of one group's rewards, or null when they are all equal. */
export function groupAdvantages(rewards: readonly number[], normalizeStd = true): number[] | null {
  if (rewards.length === 0) return null;
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  if (rewards.every((r) => Math.abs(r - mean) < 1e-12)) return null;
  const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length);
  return rewards.map((r) => (normalizeStd ? (r - mean) / (std + 1e-6) : r - mean));
}
