/**
 * The session assembler as a pure state machine over `SessionState`: turns and feedback in,
 * `TurnPair`s out. No I/O, no clock: every time comes from the events (or `now` for expiry), so
 * replaying the same log yields the same pairs.
 *
 * Pairing. Only MAIN turns are paired; SIDE turns count as activity and nothing else. The newest
 * main turn waits as `pending`; when the next main turn arrives, pending is paired with what that
 * turn's request appended after pending's response (see `extractNextState`) and with the explicit
 * feedback collected for it. `sessionDone` closes the session with `SESSION_DONE`; `expire` closes
 * an idle one with `IDLE_TIMEOUT`; the pending turn then gets the end marker, unless it carries
 * `nextMessages` (imported history that ends with the user's reply): it is paired with those. Pair ids are turn ids, so a main turn is paired at most once.
 *
 * Duplicates: a turn or feedback id seen among the session's recent ids is ignored.
 *
 * Out-of-order delivery (several gateways, an outbox drained late, an import): a main turn is
 * LATE when it was requested before the pending turn (`requestedAt`), or when its history is
 * shorter than the pending turn's and that history already contains its response (clock skew). A late turn whose response is in the pending turn's
 * history is paired right away with that history (verified) and takes the pending turn's index
 * (pending moves up by one); any other late main turn is recorded but not paired (no trustworthy
 * next state is left: its successor has been paired already). A turn arriving after the session
 * was closed reopens it when it is newer than the close; when it is older, it is late: paired
 * with the history of a held pair's turn that contains its response (it slots in before that
 * turn), else recorded only.
 *
 * Feedback grace (`feedbackGraceMs`, stream time). A ready pair is not emitted at once: it is
 * HELD in the state until `pair.createdAt + feedbackGraceMs`, and `release` (run by the service's
 * punctuator against the stream clock) emits it. Turns and feedback are two topics, so in a
 * backlog a 👍/👎 given before the next turn is often READ after it; while its pair is held the
 * feedback still attaches to it. Feedback naming a turn that has not been read yet (the feedback
 * topic read ahead of the turns topic) waits in `earlyFeedback` as long, then attaches to the
 * turn when it comes. Feedback that names no turn goes to the newest main turn whose answer
 * was complete when the feedback was given (the answer the user had seen): given after the
 * pending turn completed, it waits in `earlyFeedback` until that turn is paired (the next turn,
 * once read, tells whether it had completed before the feedback) or closed; with no pending turn
 * (none read yet, or the session closed, which a later turn may reopen) it waits for its grace
 * period, by when every turn completed before it has been read. An end-marker pair under `endPolicy: 'drop'` is held too, and dropped
 * at release only if no feedback reached it. With `feedbackGraceMs: 0` pairs are emitted at once.
 *
 * Feedback that is still lost is reported in `ignored` so the caller can count it: for a turn
 * whose pair was already emitted (`late-feedback`: given more than the grace period after the
 * pair became ready), for a turn never seen (`unknown-turn`, reported by `release` when its
 * grace period ends).
 *
 * Event time decides, not the order of reading. The live service reads turns and feedback as two
 * topics at their own pace and runs `release` and `expire` whenever its clock says so; a replay
 * reads the same records in another order. So that both give the same pairs:
 * - a pair takes feedback given before its grace period ended (`createdAt + feedbackGraceMs`),
 *   and only that, wherever the feedback waited (pending, held or early): feedback given later is
 *   `late-feedback` however early it was read;
 * - a pair's feedback is in the order it was given (time, then id), not the order it was read;
 * - a session is idle when no TURN came for `idleTimeoutMs` (feedback is about earlier turns:
 *   a session's turns are one topic, read in order, while its feedback may be read long before
 *   or after them). A turn that completes that long after the session's last one closes it first,
 *   as `expire` would have had the clock got there before the turn was read; the idle pair is
 *   made as of the moment the session went idle, whenever that is noticed;
 * - likewise a turn that comes `closedRetentionMs` after a closed session's last turn starts the
 *   session afresh, as if the service had already forgotten it (see `forget`);
 * - the session's user is the one its turns name (feedback read first does not set it).
 */
import type { EndMarker, Feedback, FeedbackEvidence, PairTurn, SessionState, Turn, TurnPair } from '../../schemas/index.ts';
import { extractNextState, feedbackItem, matchesResponse, nextStateItems } from './next-state.ts';
import { resolveAssemblerOptions, type ResolvedAssemblerOptions, type SessionAssemblerOptions } from './options.ts';
import { emptySession, rememberId, toPairTurn } from './session-state.ts';

/** Why an event changed nothing (or less than usual). */
export type IgnoredReason = 'duplicate' | 'late-turn' | 'late-feedback' | 'unknown-turn' | 'no-pending';

export interface AssemblerStep {
  state: SessionState;
  /** Pairs to emit now (held pairs are in `state.held` until `release`). */
  pairs: TurnPair[];
  /** Set when the event was ignored, in part or whole. */
  ignored?: IgnoredReason;
  /** Feedback that waited for a pair made in this step but was given after its grace period: late, left out (`late-feedback`). */
  lateFeedback?: number;
  /** True when this step closed the session by the idle timeout (before applying a turn that came after it went idle). */
  closedIdle?: boolean;
}

export interface ReleaseStep extends AssemblerStep {
  /** Early feedback whose turn never came within the grace period: lost (`unknown-turn`). */
  expiredFeedback: Feedback[];
}

type Opts = SessionAssemblerOptions;
const resolved = (o: Opts | undefined): ResolvedAssemblerOptions => resolveAssemblerOptions(o);

/** Feedback in the order it was given: time, then id (never the order it was read in). */
const byGiven = (a: FeedbackEvidence, b: FeedbackEvidence): number =>
  a.createdAt - b.createdAt || (a.feedbackId < b.feedbackId ? -1 : a.feedbackId > b.feedbackId ? 1 : 0);

/** Was feedback given at `givenAt` in time for a pair that became ready at `readyAt`? */
const inGrace = (givenAt: number, readyAt: number, opts: ResolvedAssemblerOptions): boolean => givenAt < readyAt + opts.feedbackGraceMs;

/** A ready pair of the pending turn, with the feedback given in time for it; `late` counts the rest. */
function pairOf(
  state: SessionState,
  opts: ResolvedAssemblerOptions,
  fields: Pick<TurnPair, 'nextState' | 'endMarker' | 'historyVerified' | 'createdAt'>,
  waiting: FeedbackEvidence[],
): { pair: TurnPair; late: number } {
  const turn = state.pending!;
  const feedback = waiting.filter((f) => inGrace(f.createdAt, fields.createdAt, opts)).sort(byGiven);
  const pair: TurnPair = {
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
  return { pair, late: waiting.length - feedback.length };
}

const evidenceOf = (f: Feedback): FeedbackEvidence => ({
  feedbackId: f.feedbackId,
  rating: f.rating,
  text: f.text,
  createdAt: f.createdAt,
});

/** An end-marker pair that nothing reached is dropped under `endPolicy: 'drop'`. */
const wanted = (p: TurnPair, opts: ResolvedAssemblerOptions): boolean =>
  !(p.endMarker !== null && p.feedback.length === 0 && opts.endPolicy === 'drop');

/** Ready pairs: held for the grace period, or (grace 0) emitted now. */
function settle(state: SessionState, ready: TurnPair[], opts: ResolvedAssemblerOptions): { state: SessionState; pairs: TurnPair[] } {
  if (ready.length === 0) return { state, pairs: [] };
  if (opts.feedbackGraceMs === 0) return { state, pairs: ready.filter((p) => wanted(p, opts)) };
  return { state: { ...state, held: [...state.held, ...ready] }, pairs: [] };
}

/** Makes `turn` the pending turn, with the early feedback that was waiting for it. */
function makePending(state: SessionState, turn: PairTurn): SessionState {
  const mine = state.earlyFeedback.filter((f) => f.turnId === turn.turnId);
  return {
    ...state,
    pending: turn,
    pendingFeedback: mine.map(evidenceOf),
    earlyFeedback: mine.length > 0 ? state.earlyFeedback.filter((f) => f.turnId !== turn.turnId) : state.earlyFeedback,
  };
}

/** `pair` with one more feedback, in the order given (feedback items always end the next state). */
function withFeedback(pair: TurnPair, evidence: FeedbackEvidence): TurnPair {
  const feedback = [...pair.feedback, evidence].sort(byGiven);
  const items = pair.nextState.slice(0, pair.nextState.length - pair.feedback.length);
  return { ...pair, feedback, nextState: [...items, ...feedback.map(feedbackItem)] };
}

/**
 * Waiting feedback that names no turn given while the pending turn's answer was the latest, i.e.
 * at or after its completion and before `until` (the next turn's completion, or the close): it is
 * about the pending turn.
 */
function claimAnonymous(state: SessionState, until: number): SessionState {
  const p = state.pending;
  if (!p || state.earlyFeedback.length === 0) return state;
  const mine = state.earlyFeedback.filter((f) => f.turnId === null && f.createdAt >= p.completedAt && f.createdAt < until);
  if (mine.length === 0) return state;
  return {
    ...state,
    pendingFeedback: [...state.pendingFeedback, ...mine.map(evidenceOf)],
    earlyFeedback: state.earlyFeedback.filter((f) => !mine.includes(f)),
  };
}

/** Closes a session: the pending turn gets the end marker (its pair held, or emitted per the end policy). */
function close(prev: SessionState, reason: EndMarker, at: number, opts: ResolvedAssemblerOptions): AssemblerStep {
  // Feedback naming no turn given after the close may be about a turn that reopens the session:
  // it waits (see `release`).
  const state = claimAnonymous(prev, at);
  const ready: TurnPair[] = [];
  let late = 0;
  // A turn that knows what followed it (imported history) is paired with that, as a live turn is.
  const followed = nextStateItems(state.pending?.nextMessages ?? []);
  const fields = followed.length
    ? { nextState: followed, endMarker: null, historyVerified: true, createdAt: at }
    : { nextState: [], endMarker: reason, historyVerified: false, createdAt: at };
  if (state.pending) {
    const made = pairOf(state, opts, fields, state.pendingFeedback);
    ready.push(made.pair);
    late = made.late;
  }
  const settled = settle({ ...state, pending: null, pendingFeedback: [], closed: true, closedReason: reason }, ready, opts);
  return late > 0 ? { ...settled, lateFeedback: late } : settled;
}

/** When a session falls idle: its last turn's completion plus the idle timeout (never, before its first turn). */
export const idleAt = (state: SessionState, opts: ResolvedAssemblerOptions): number =>
  state.closed || state.lastActivityAt === 0 ? Number.POSITIVE_INFINITY : state.lastActivityAt + opts.idleTimeoutMs;

/**
 * What the clock would have done to a session by event time `at`, had it got there before the
 * session's next turn was read: closed it when idle (as of `idleAt`), or, closed for
 * `closedRetentionMs`, forgotten it (see `forget`) once its held pairs are out.
 */
function catchUp(prev: SessionState, at: number, opts: ResolvedAssemblerOptions): AssemblerStep & { forgotten?: boolean } {
  let step: AssemblerStep = { state: prev, pairs: [] };
  if (at >= idleAt(prev, opts)) step = { ...close(prev, 'IDLE_TIMEOUT', idleAt(prev, opts), opts), closedIdle: true };
  // What is still held goes out when the clock says so, as always: feedback for it may be read later.
  if (forgettable(step.state, at, opts))
    return { ...step, state: forget(step.state) ?? emptySession(prev.sessionId, null), forgotten: true };
  return step;
}

/** Applies one turn (main or side) to a session's state. */
export function applyTurn(prev: SessionState | undefined, turn: Turn, options?: Opts): AssemblerStep {
  const opts = resolved(options);
  // First what the clock would have done by the time this turn completed (see `catchUp`).
  const caught = prev ? catchUp(prev, turn.completedAt, opts) : undefined;
  const before = caught?.pairs ?? [];
  const step = applyTurnNow(caught?.state, turn, opts);
  if (!caught || (caught.state === prev && before.length === 0)) return step;
  const late = (caught.lateFeedback ?? 0) + (step.lateFeedback ?? 0);
  return {
    ...step,
    pairs: [...before, ...step.pairs],
    ...(late > 0 ? { lateFeedback: late } : {}),
    ...(caught.closedIdle ? { closedIdle: true } : {}),
  };
}

/**
 * A main turn read after its session closed though requested before the close (another gateway's
 * outbox was slower than the one that took the last turn): while a held pair's turn has the late
 * turn's response in its history, the late turn is paired with that history (verified) and slots
 * in before that turn, as a late turn slots in before pending. Null when no held pair verifies it.
 */
function slotInBeforeHeld(
  state: SessionState,
  turn: Turn,
  opts: ResolvedAssemblerOptions,
): { state: SessionState; lateFeedback: number } | null {
  const after = state.held
    .filter(
      (p) =>
        p.turn.requestMessages.length > turn.requestMessages.length &&
        p.turn.requestMessages.some((m) => matchesResponse(m, turn.response)),
    )
    .sort((a, b) => a.turn.requestMessages.length - b.turn.requestMessages.length)[0];
  if (!after) return null;
  const next = extractNextState(turn.response, after.turn.requestMessages, turn.requestMessages);
  if (!next.historyVerified) return null;
  const index = after.turn.mainTurnIndex;
  const early = state.earlyFeedback.filter((f) => f.turnId === turn.turnId).map(evidenceOf);
  let pair: TurnPair = {
    pairId: turn.turnId,
    sessionId: state.sessionId,
    userId: state.userId,
    turn: toPairTurn(turn, index),
    nextState: next.items,
    endMarker: null,
    feedback: [],
    historyVerified: true,
    createdAt: after.turn.requestedAt,
    tag: opts.tag,
  };
  for (const e of early) if (inGrace(e.createdAt, pair.createdAt, opts)) pair = withFeedback(pair, e);
  const moved = state.held.map((p) =>
    p.turn.mainTurnIndex >= index ? { ...p, turn: { ...p.turn, mainTurnIndex: p.turn.mainTurnIndex + 1 } } : p,
  );
  return {
    state: {
      ...state,
      held: [...moved, pair],
      mainTurnCount: state.mainTurnCount + 1,
      earlyFeedback: early.length > 0 ? state.earlyFeedback.filter((f) => f.turnId !== turn.turnId) : state.earlyFeedback,
    },
    lateFeedback: early.filter((e) => !inGrace(e.createdAt, pair.createdAt, opts)).length,
  };
}

function applyTurnNow(prev: SessionState | undefined, turn: Turn, opts: ResolvedAssemblerOptions): AssemblerStep {
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
  if (lateForClosed && turn.turnType === 'MAIN') {
    const slotted = slotInBeforeHeld(state, turn, opts);
    if (slotted) return { state: slotted.state, pairs: [], ...(slotted.lateFeedback > 0 ? { lateFeedback: slotted.lateFeedback } : {}) };
  }
  if (lateForClosed) return { state, pairs: [], ignored: turn.turnType === 'MAIN' ? 'late-turn' : undefined };
  if (wasClosed) state = { ...state, closed: false, closedReason: null };

  const ready: TurnPair[] = [];
  let ignored: IgnoredReason | undefined;
  let lateFeedback = 0;
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
      const next = extractNextState(turn.response, pending.requestMessages, turn.requestMessages);
      if (next.historyVerified) {
        // The late turn slots in before pending: it takes pending's index, pending moves up.
        const late = toPairTurn(turn, pending.mainTurnIndex);
        const early = state.earlyFeedback.filter((f) => f.turnId === turn.turnId).map(evidenceOf);
        let latePair: TurnPair = {
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
        };
        for (const e of early) if (inGrace(e.createdAt, latePair.createdAt, opts)) latePair = withFeedback(latePair, e);
        lateFeedback += early.filter((e) => !inGrace(e.createdAt, latePair.createdAt, opts)).length;
        ready.push(latePair);
        state = {
          ...state,
          mainTurnCount: state.mainTurnCount + 1,
          pending: { ...pending, mainTurnIndex: pending.mainTurnIndex + 1 },
          earlyFeedback: early.length > 0 ? state.earlyFeedback.filter((f) => f.turnId !== turn.turnId) : state.earlyFeedback,
        };
      } else {
        ignored = 'late-turn';
      }
    } else {
      if (pending) {
        state = claimAnonymous(state, turn.completedAt);
        const next = extractNextState(pending.response, turn.requestMessages, pending.requestMessages);
        const made = pairOf(
          state,
          opts,
          { nextState: next.items, endMarker: null, historyVerified: next.historyVerified, createdAt: turn.requestedAt },
          state.pendingFeedback,
        );
        ready.push(made.pair);
        lateFeedback += made.late;
      }
      state = { ...makePending(state, toPairTurn(turn, state.mainTurnCount)), mainTurnCount: state.mainTurnCount + 1 };
    }
  }
  const settled = settle(state, ready, opts);
  state = settled.state;
  let pairs = settled.pairs;
  if (turn.sessionDone) {
    const closed = close(state, 'SESSION_DONE', turn.completedAt, opts);
    state = closed.state;
    pairs = [...pairs, ...closed.pairs];
    lateFeedback += closed.lateFeedback ?? 0;
  }
  return { state, pairs, ...(ignored ? { ignored } : {}), ...(lateFeedback > 0 ? { lateFeedback } : {}) };
}

/** Applies an explicit feedback event (👍/👎, text) to a session's state. */
export function applyFeedback(prev: SessionState | undefined, feedback: Feedback, options?: Opts): AssemblerStep {
  const opts = resolved(options);
  // The session's user is the one its turns name: read first, feedback does not set it.
  let state = prev ?? emptySession(feedback.sessionId, null);
  if (state.recentIds.includes(feedback.feedbackId)) return { state, pairs: [], ignored: 'duplicate' };
  state = { ...state, recentIds: rememberId(state.recentIds, feedback.feedbackId, opts.maxRecentIds) };
  const evidence = evidenceOf(feedback);
  const { pending, held } = state;
  const toPending = (): AssemblerStep => ({ state: { ...state, pendingFeedback: [...state.pendingFeedback, evidence] }, pairs: [] });
  // A held pair takes feedback given before its grace period ended, however long it is held.
  const toHeld = (k: number): AssemblerStep =>
    inGrace(feedback.createdAt, held[k].createdAt, opts)
      ? { state: { ...state, held: held.map((p, i) => (i === k ? withFeedback(p, evidence) : p)) }, pairs: [] }
      : { state, pairs: [], ignored: 'late-feedback' };

  if (feedback.turnId === null) {
    // The newest answer the user had seen: pending's, unless it completed later. A turn completed
    // before the feedback was given may not be read yet (turns are the other topic): the next
    // turn of pending, or one that reopens a closed session. With a grace period the feedback
    // waits: for pending to be paired or closed, or (no pending) until its grace ends (see
    // `release`). Given before pending completed, it is about a turn read already.
    if (opts.feedbackGraceMs > 0 && (!pending || pending.completedAt <= feedback.createdAt))
      return { state: { ...state, earlyFeedback: [...state.earlyFeedback, feedback] }, pairs: [] };
    if (pending && pending.completedAt <= feedback.createdAt) return toPending();
    const best = heldFor(held, feedback.createdAt);
    if (best >= 0) return toHeld(best);
    if (state.mainTurnCount > 0) return { state, pairs: [], ignored: 'late-feedback' };
    return { state, pairs: [], ignored: 'no-pending' };
  }
  if (pending?.turnId === feedback.turnId) return toPending();
  const k = held.findIndex((p) => p.pairId === feedback.turnId);
  if (k >= 0) return toHeld(k);
  if (state.recentIds.includes(feedback.turnId)) return { state, pairs: [], ignored: 'late-feedback' };
  // A turn not read yet: with a grace period, wait for it.
  if (opts.feedbackGraceMs > 0) return { state: { ...state, earlyFeedback: [...state.earlyFeedback, feedback] }, pairs: [] };
  return { state, pairs: [], ignored: 'unknown-turn' };
}

/** The held pair that feedback naming no turn given at `at` is about: the newest completed before it. */
function heldFor(held: readonly TurnPair[], at: number): number {
  let best = -1;
  for (let k = 0; k < held.length; k++) {
    const t = held[k].turn;
    if (t.completedAt <= at && (best < 0 || t.completedAt >= held[best].turn.completedAt)) best = k;
  }
  return best;
}

/** Waiting feedback naming no turn given after `pending` completed: the pending turn's, unless a later turn completed before it. */
const forPending = (pending: PairTurn | null, f: Feedback): boolean =>
  f.turnId === null && pending !== null && f.createdAt >= pending.completedAt;

/** Whether waiting feedback naming no turn, not the pending turn's, may still go to held pair `p`. */
const awaitedBy = (waiting: readonly Feedback[], pending: PairTurn | null, p: TurnPair, opts: ResolvedAssemblerOptions): boolean =>
  waiting.some(
    (f) => f.turnId === null && !forPending(pending, f) && p.turn.completedAt <= f.createdAt && inGrace(f.createdAt, p.createdAt, opts),
  );

/** The earliest stream time at which `release` or `expire` changes the session (∞: none). */
export function dueAt(state: SessionState, options?: Opts): number {
  const opts = resolved(options);
  let t = idleAt(state, opts);
  for (const f of state.earlyFeedback) if (!forPending(state.pending, f)) t = Math.min(t, f.createdAt + opts.feedbackGraceMs);
  for (const p of state.held)
    if (!awaitedBy(state.earlyFeedback, state.pending, p, opts)) t = Math.min(t, p.createdAt + opts.feedbackGraceMs);
  return t;
}

/**
 * Emits the held pairs whose grace period has passed at stream time `now` (per the end policy),
 * and forgets early feedback whose turn never came (returned, to be counted as lost).
 *
 * Feedback naming no turn that waits without a pending turn to claim it (see `applyFeedback`) is
 * settled once its own grace has passed: every turn completed before it has been read by then.
 * It goes to the newest held pair completed before it, if given within that pair's grace; a
 * pair it may still go to is held until then.
 */
export function release(prev: SessionState, now: number, options?: Opts): ReleaseStep {
  const opts = resolved(options);
  const due = (t: number) => t + opts.feedbackGraceMs <= now;
  const pending = prev.pending;
  let held = prev.held;
  const expiredFeedback: Feedback[] = [];
  const waiting: Feedback[] = [];
  for (const f of prev.earlyFeedback) {
    if (!due(f.createdAt) || forPending(pending, f)) waiting.push(f);
    else if (f.turnId !== null) expiredFeedback.push(f);
    else {
      const k = heldFor(held, f.createdAt);
      if (k >= 0 && inGrace(f.createdAt, held[k].createdAt, opts))
        held = held.map((p, i) => (i === k ? withFeedback(p, evidenceOf(f)) : p));
      else expiredFeedback.push(f);
    }
  }
  // A pair that waiting feedback may still reach stays held until that feedback is settled.
  const ready = held.filter((p) => due(p.createdAt) && !awaitedBy(waiting, pending, p, opts));
  if (ready.length === 0 && waiting.length === prev.earlyFeedback.length && held === prev.held)
    return { state: prev, pairs: [], expiredFeedback };
  return {
    state: { ...prev, held: held.filter((p) => !ready.includes(p)), earlyFeedback: waiting },
    pairs: ready.filter((p) => wanted(p, opts)),
    expiredFeedback,
  };
}

/**
 * Closes the session with `IDLE_TIMEOUT` when it has been idle for `idleTimeoutMs` at `now`.
 * A closed session is left as it is.
 */
export function expire(state: SessionState, now: number, idleTimeoutMs: number, options?: Opts): AssemblerStep {
  const opts = resolved(options);
  // (Before its first turn a session is not idle: it has no turn to be idle since.)
  if (state.closed || state.lastActivityAt === 0 || now - state.lastActivityAt < idleTimeoutMs) return { state, pairs: [] };
  // As of the moment it went idle, whenever that is noticed: the same pair whoever closes it.
  return close(state, 'IDLE_TIMEOUT', state.lastActivityAt + idleTimeoutMs, opts);
}

/**
 * Whether a session is forgotten at stream time `now` (see `forget`): closed `closedRetentionMs`
 * after its last turn (a turn of the session that comes later starts it afresh, see `catchUp`),
 * or with no turn and nothing left waiting (feedback whose turn never came).
 */
export function forgettable(state: SessionState, now: number, options?: Opts): boolean {
  const opts = resolved(options);
  if (state.closed && state.lastActivityAt > 0) return now - state.lastActivityAt >= opts.closedRetentionMs;
  return state.lastActivityAt === 0 && !state.pending && state.held.length === 0 && state.earlyFeedback.length === 0;
}

/**
 * A forgettable session, forgotten: its turn count, ids and user are dropped. What does not
 * belong to its past stays: pairs still held (their feedback may not be read yet) and feedback
 * waiting for a turn not read yet. Undefined (the state deleted) when there is none.
 */
export function forget(state: SessionState): SessionState | undefined {
  if (state.earlyFeedback.length === 0 && state.held.length === 0) return undefined;
  return {
    ...emptySession(state.sessionId, null),
    held: state.held,
    earlyFeedback: state.earlyFeedback,
    recentIds: state.earlyFeedback.map((f) => f.feedbackId),
  };
}
