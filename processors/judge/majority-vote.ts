/** Turning votes into one verdict, exactly as docs/design/algorithms.md §3–4 state it. */
import type { Vote } from '../../schemas/index.ts';

/**
 * Majority of the valid votes: invalid (null) votes are dropped; none left → 0; a tie for the top
 * count → 0; else the most common score.
 */
export function majorityVote(votes: ReadonlyArray<number | null>): number {
  const counts = new Map<number, number>();
  for (const v of votes) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: number | null = null;
  let bestCount = 0;
  let tie = false;
  for (const [score, count] of counts) {
    if (count > bestCount) [best, bestCount, tie] = [score, count, false];
    else if (count === bestCount) tie = true;
  }
  return best === null || tie ? 0 : best;
}

/** Minimum length a hint must EXCEED to be accepted. */
export const MIN_HINT_LENGTH = 10;

/**
 * The accepted hint of a set of hint votes: among votes with score 1 and a hint longer than 10
 * characters, the longest (the first of equally long ones); null when none qualifies.
 */
export function selectHint(votes: ReadonlyArray<Pick<Vote, 'score' | 'hint'>>): string | null {
  let best: string | null = null;
  for (const v of votes) {
    const hint = v.hint?.trim();
    if (v.score === 1 && hint && hint.length > MIN_HINT_LENGTH && (best === null || hint.length > best.length)) best = hint;
  }
  return best;
}
