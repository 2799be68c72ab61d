/**
 * The session assembler as a pure state machine over `SessionState`: turns and feedback in,
 * `TurnPair`s out. No I/O, no clock: every time comes from the events (or `now` for expiry), so
 * replaying the same log yields the same pairs.
 *
 * Pairing. Only MAIN turns are paired; SIDE turns count as activity and nothing else. The newest
 * main turn waits as `pending`; when the next main turn arrives, pending is paired with what that
 * turn's request appended after pending's response (see `extractNextState`) and with the explicit
 * feedback collected for it. `sessionDone` closes the session with `SESSION_DONE`; `expire` closes
 * an idle one with `IDLE_TIMEOUT`. Pair ids are turn ids, so a main turn is paired at most once.
 *
 * Duplicates: a turn or feedback id seen among the session's recent ids is ignored.
 *
 * Out-of-order delivery (several gateways, an outbox drained late, an import): a main turn is
 * LATE when it was requested before the pending turn (`requestedAt`), or when its history is
 * shorter than the pending turn's and that history already contains its response (clock skew). A late turn whose response is in the pending turn's
 * history is paired right away with that history (verified) and takes the pending turn's index
 * (pending moves up by one); any other late main turn is recorded but not paired (no trustworthy
 * next state is left: its successor has been paired already). A turn arriving after the session
 * was closed reopens it when it is newer than the close; when it is older, it is late and
 * recorded only.
 *
 * Feedback attaches to the pending turn when it names it (or names no turn); feedback for a turn
 * that is already paired is too late, for an unknown turn it is ignored; both are reported in
 * `ignored` so the caller can count them.
 */
import type { EndMarker, Feedback, FeedbackEvidence, SessionState, Turn, TurnPair } from '../../schemas/index.ts';
import { extractNextState, feedbackItem, matchesResponse } from './next-state.ts';
import { resolveAssemblerOptions, type ResolvedAssemblerOptions, type SessionAssemblerOptions } from './options.ts';
import { emptySession, rememberId, toPairTurn } from './session-state.ts';

/** Why an event changed nothing (or less than usual). */
export type IgnoredReason = 'duplicate' | 'late-turn' | 'late-feedback' | 'unknown-turn' | 'no-pending';

export interface AssemblerStep {
  state: SessionState;
  pairs: TurnPair[];
  /** Set when the event was ignored, in part or whole. */
  ignored?: IgnoredReason;
}

type Opts = SessionAssemblerOptions;
const resolved = (o: Opts | undefined): ResolvedAssemblerOptions => resolveAssemblerOptions(o);

function pairOf(state: SessionState, opts: ResolvedAssemblerOptions, fields: Pick<TurnPair, 'nextState' | 'endMarker' | 'historyVerified' | 'createdAt'>, feedback: FeedbackEvidence[]): TurnPair {
  const turn = state.pending!;
  return {
    pairId: turn.turnId,
    sessionId: state.sessionId,
    userId: state.userId,
    turn,
    nextState: [...fields.nextState, ...feedback.map(feedbackItem)],
    endMarker: fields.endMarker,
    feedback,
    historyVerified: fields.historyVerified,
    createdAt: fields.createdAt,
    tag: opts.tag,
  };
}

/** Closes a session: the pending turn gets the end marker (emitted per the end policy). */
function close(state: SessionState, reason: EndMarker, at: number, opts: ResolvedAssemblerOptions): AssemblerStep {
  const pairs: TurnPair[] = [];
  if (state.pending && (state.pendingFeedback.length > 0 || opts.endPolicy === 'masked')) {
    pairs.push(pairOf(state, opts, { nextState: [], endMarker: reason, historyVerified: false, createdAt: at }, state.pendingFeedback));
  }
  return { state: { ...state, pending: null, pendingFeedback: [], closed: true, closedReason: reason }, pairs };
}

/** Applies one turn (main or side) to a session's state. */
export function applyTurn(prev: SessionState | undefined, turn: Turn, options?: Opts): AssemblerStep {
  const opts = resolved(options);
  let state = prev ?? emptySession(turn.sessionId, turn.userId);
  if (state.recentIds.includes(turn.turnId)) return { state, pairs: [], ignored: 'duplicate' };

  const wasClosed = state.closed;
  const lateForClosed = wasClosed && turn.requestedAt < state.lastActivityAt;
  state = {
    ...state,
    userId: turn.userId ?? state.userId,
    recentIds: rememberId(state.recentIds, turn.turnId, opts.maxRecentIds),
    lastActivityAt: Math.max(state.lastActivityAt, turn.completedAt),
  };
  if (lateForClosed) return { state, pairs: [], ignored: turn.turnType === 'MAIN' ? 'late-turn' : undefined };
  if (wasClosed) state = { ...state, closed: false, closedReason: null };

  const pairs: TurnPair[] = [];
  let ignored: IgnoredReason | undefined;
  if (turn.turnType === 'MAIN') {
    const pending = state.pending;
    // Older by the gateway's clock, or (clock skew between gateways) its response is already in
    // pending's longer history. An identical short reply ("OK") alone does not make a turn late.
    const isLate =
      pending !== null &&
      (turn.requestedAt < pending.requestedAt ||
        (turn.requestMessages.length < pending.requestMessages.length &&
          pending.requestMessages.some((m) => matchesResponse(m, turn.response))));
    if (pending && isLate) {
      const next = extractNextState(turn.response, pending.requestMessages);
      if (next.historyVerified) {
        // The late turn slots in before pending: it takes pending's index, pending moves up.
        const late = toPairTurn(turn, pending.mainTurnIndex);
        pairs.push({
          pairId: late.turnId,
          sessionId: state.sessionId,
          userId: state.userId,
          turn: late,
          nextState: next.items,
          endMarker: null,
          feedback: [],
          historyVerified: true,
          createdAt: pending.requestedAt,
          tag: opts.tag,
        });
        state = {
          ...state,
          mainTurnCount: state.mainTurnCount + 1,
          pending: { ...pending, mainTurnIndex: pending.mainTurnIndex + 1 },
        };
      } else {
        ignored = 'late-turn';
      }
    } else {
      if (pending) {
        const next = extractNextState(pending.response, turn.requestMessages);
        pairs.push(
          pairOf(state, opts, { nextState: next.items, endMarker: null, historyVerified: next.historyVerified, createdAt: turn.requestedAt }, state.pendingFeedback),
        );
      }
      state = { ...state, pending: toPairTurn(turn, state.mainTurnCount), pendingFeedback: [], mainTurnCount: state.mainTurnCount + 1 };
    }
  }
  if (turn.sessionDone) {
    const closed = close(state, 'SESSION_DONE', turn.completedAt, opts);
    return { state: closed.state, pairs: [...pairs, ...closed.pairs], ...(ignored ? { ignored } : {}) };
  }
  return { state, pairs, ...(ignored ? { ignored } : {}) };
}

/** Applies an explicit feedback event (👍/👎, text) to a session's state. */
export function applyFeedback(prev: SessionState | undefined, feedback: Feedback, options?: Opts): AssemblerStep {
  const opts = resolved(options);
  let state = prev ?? emptySession(feedback.sessionId, feedback.userId);
  if (state.recentIds.includes(feedback.feedbackId)) return { state, pairs: [], ignored: 'duplicate' };
  state = {
    ...state,
    recentIds: rememberId(state.recentIds, feedback.feedbackId, opts.maxRecentIds),
    lastActivityAt: state.closed ? state.lastActivityAt : Math.max(state.lastActivityAt, feedback.createdAt),
  };
  const pending = state.pending;
  if (!pending) {
    const late = feedback.turnId === null ? state.mainTurnCount > 0 : state.recentIds.includes(feedback.turnId);
    return { state, pairs: [], ignored: late ? 'late-feedback' : 'no-pending' };
  }
  if (feedback.turnId !== null && feedback.turnId !== pending.turnId) {
    return { state, pairs: [], ignored: state.recentIds.includes(feedback.turnId) ? 'late-feedback' : 'unknown-turn' };
  }
  const evidence: FeedbackEvidence = { feedbackId: feedback.feedbackId, rating: feedback.rating, text: feedback.text, createdAt: feedback.createdAt };
  return { state: { ...state, pendingFeedback: [...state.pendingFeedback, evidence] }, pairs: [] };
}

/**
 * Closes the session with `IDLE_TIMEOUT` when it has been idle for `idleTimeoutMs` at `now`.
 * A closed session is left as it is.
 */
export function expire(state: SessionState, now: number, idleTimeoutMs: number, options?: Opts): AssemblerStep {
  const opts = resolved(options);
  if (state.closed || now - state.lastActivityAt < idleTimeoutMs) return { state, pairs: [] };
  return close(state, 'IDLE_TIMEOUT', now, opts);
}
