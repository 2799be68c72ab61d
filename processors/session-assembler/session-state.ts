/** Small helpers over the assembler's per-session state (the `SessionState` schema). */
import { samplingOf, type PairTurn, type SessionState, type Turn } from '../../schemas/index.ts';

export function emptySession(sessionId: string, userId: string | null): SessionState {
  return {
    sessionId,
    userId,
    mainTurnCount: 0,
    pending: null,
    pendingFeedback: [],
    recentIds: [],
    lastActivityAt: 0,
    closed: false,
    closedReason: null,
    held: [],
    earlyFeedback: [],
  };
}

/** Remembers an id for dedupe, forgetting the oldest beyond `max`. */
export function rememberId(recentIds: readonly string[], id: string, max: number): string[] {
  const next = [...recentIds, id];
  return next.length > max ? next.slice(next.length - max) : next;
}

/** What the judge and the trainer need of a main turn. */
export function toPairTurn(turn: Turn, mainTurnIndex: number): PairTurn {
  return {
    turnId: turn.turnId,
    mainTurnIndex,
    policyModelId: turn.policyModelId,
    policyVersion: turn.policyVersion,
    model: turn.model,
    requestMessages: turn.requestMessages,
    response: turn.response,
    promptTokenIds: turn.promptTokenIds,
    responseTokenIds: turn.responseTokenIds,
    responseLogprobs: turn.responseLogprobs,
    tokenized: turn.tokenized,
    exactLogprobs: turn.exactLogprobs,
    ...samplingOf(turn),
    toolsJson: turn.toolsJson,
    requestedAt: turn.requestedAt,
    completedAt: turn.completedAt,
    ...(turn.nextMessages?.length ? { nextMessages: turn.nextMessages } : {}),
    ...(turn.metadata && Object.keys(turn.metadata).length ? { metadata: turn.metadata } : {}),
  };
}

/**
 * A pair whose turn can become a token-level sample: the engine gave token ids and the response
 * is not empty. Other pairs are still emitted and judged (analytics see them); the sample builder
 * skips them.
 */
export function isTrainable(turn: Pick<PairTurn, 'tokenized' | 'responseTokenIds'>): boolean {
  return turn.tokenized && turn.responseTokenIds.length > 0;
}
