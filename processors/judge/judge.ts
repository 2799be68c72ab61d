/** What every judge is: a pair in, a `Judgement` (with every vote) out. */
import type { Judgement, TurnPair, Vote } from '../../schemas/index.ts';
import { guardHint } from './hint-guard.ts';

/**
 * What the judge is asked for, by the training method it feeds:
 * `rl` → process-reward votes; `opd` → hint votes; `combined` → both.
 */
export type JudgeMode = 'rl' | 'opd' | 'combined';

export interface JudgeCallOptions {
  /** Cancels outstanding votes (shutdown). */
  signal?: AbortSignal;
  /** The judgement's `createdAt`. @default Date.now() */
  now?: number;
}

export interface Judge {
  /** Stable id, part of `judgementId` (= turnId + ':' + id). */
  readonly id: string;
  /**
   * Judges in-process in microseconds (no model call): the judge service then takes a whole
   * fetched batch per call, and a batch that fails is split and judged again at no cost.
   * @default false
   */
  readonly local?: boolean;
  /** Throws `TurnstreamError(JUDGE_FAILED)` when every vote failed (errors, timeouts). */
  judge(pair: TurnPair, opts?: JudgeCallOptions): Promise<Judgement>;
}

/** True when the pair carries any evidence to judge: a next state or feedback. */
export const hasEvidence = (pair: TurnPair): boolean => pair.nextState.length > 0 || pair.feedback.length > 0;

/** The judgement of `pair`. Its accepted hint is guarded (hint-guard.ts): whatever judge made it, no injected instruction reaches the teacher. */
export function makeJudgement(pair: TurnPair, judgeId: string, votes: Vote[], score: number, hint: string | null, now: number): Judgement {
  return {
    judgementId: `${pair.pairId}:${judgeId}`,
    turnId: pair.pairId,
    sessionId: pair.sessionId,
    userId: pair.userId,
    policyVersion: pair.turn.policyVersion,
    judgeId,
    votes,
    score,
    hint: guardHint(hint),
    pair,
    createdAt: now,
    tag: pair.tag,
  };
}
