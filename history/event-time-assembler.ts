/**
 * The session assembler's pure core driven by event time, for a batch replay of one partition's
 * history (turns and feedback are co-partitioned by session, so a partition's sessions see no
 * event of another partition).
 *
 * The two topics are merged the way Kafka Streams merges its inputs: each in offset order, the
 * head with the earlier event time first (`completedAt` of a turn, `createdAt` of feedback; turns
 * first on a tie). Before an event is applied, whatever fell due is run, as the live service's
 * punctuator would: held pairs whose feedback grace has passed are released, sessions idle for
 * the idle timeout are closed. "Fell due" is measured against a watermark, not against the latest
 * event time read: the earliest event time of everything not applied yet (`watermarks`). History
 * is not in event-time order (an import is in the file's order, whatever its times), and a clock
 * that ran ahead with a later conversation closed an earlier one by the idle timeout between two
 * of its turns. With the watermark nothing falls due before a record that belongs to it is
 * applied, which is what the live service's clock promises too (see
 * processors/session-assembler/stream-clock.ts); the steps themselves decide by event time
 * (session-assembler.ts), so the pairs are the live ones, whatever the order the live service
 * read the records in. The wall clock plays no part until `finish`, so the same history gives the
 * same pairs in the same order.
 */
import type { Feedback, SessionState, Turn, TurnPair } from '../schemas/index.ts';
import {
  applyFeedback,
  applyTurn,
  dueAt,
  expire,
  forget,
  forgettable,
  idleAt,
  release,
  resolveAssemblerOptions,
  type AssemblerStep,
  type ResolvedAssemblerOptions,
  type SessionAssemblerOptions,
} from '../processors/index.ts';

/** One decoded input record of the range. */
export type HistoryEvent = { topicId: 'turns'; offset: bigint; value: Turn } | { topicId: 'feedback'; offset: bigint; value: Feedback };

export const eventTime = (e: HistoryEvent): number => (e.topicId === 'turns' ? e.value.completedAt : e.value.createdAt);

/** Merges two offset-ordered sequences by event time (turns first on a tie). */
export function* mergeByEventTime(turns: readonly HistoryEvent[], feedback: readonly HistoryEvent[]): Generator<HistoryEvent> {
  let i = 0;
  let j = 0;
  while (i < turns.length || j < feedback.length) {
    if (j >= feedback.length || (i < turns.length && eventTime(turns[i]) <= eventTime(feedback[j]))) yield turns[i++];
    else yield feedback[j++];
  }
}

/**
 * For each event of a merged sequence, the earliest event time from it to the end: what may
 * fall due before it is applied (nothing of a later record is passed over).
 */
export function watermarks(events: readonly HistoryEvent[]): number[] {
  const out = new Array<number>(events.length);
  let min = Number.POSITIVE_INFINITY;
  for (let i = events.length - 1; i >= 0; i--) {
    min = Math.min(min, eventTime(events[i]));
    out[i] = min;
  }
  return out;
}

/** Counts of what the assembler left out, as the live service counts them in its metrics. */
export interface AssemblerCounts {
  ignored: Record<string, number>;
  lostFeedback: number;
}

/** A min-heap of (due time, session) with stale entries skipped when popped. */
class DueHeap {
  private readonly a: Array<[number, string]> = [];
  get size(): number {
    return this.a.length;
  }
  peek(): number {
    return this.a.length > 0 ? this.a[0][0] : Number.POSITIVE_INFINITY;
  }
  push(due: number, key: string): void {
    const a = this.a;
    a.push([due, key]);
    for (let i = a.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if (a[p][0] <= a[i][0]) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop(): [number, string] | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l][0] < a[m][0]) m = l;
        if (r < a.length && a[r][0] < a[m][0]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}

export class EventTimeAssembler {
  private readonly sessions = new Map<string, SessionState>();
  private readonly due = new DueHeap();
  private readonly opts: ResolvedAssemblerOptions;
  readonly counts: AssemblerCounts = { ignored: {}, lostFeedback: 0 };

  constructor(options: SessionAssemblerOptions = {}) {
    this.opts = resolveAssemblerOptions(options);
  }

  /** When something of `s` falls due: a held pair or early feedback ends its grace, or the session goes idle. */
  private dueOf(s: SessionState): number {
    return dueAt(s, this.opts);
  }

  private put(key: string, s: SessionState): void {
    this.sessions.set(key, s);
    const t = this.dueOf(s);
    if (Number.isFinite(t)) this.due.push(t, key);
  }

  /** The punctuator's work for one session at `now`: release what is due, then close it if idle. */
  private tick(key: string, now: number, out: TurnPair[]): void {
    const state = this.sessions.get(key);
    if (!state) return;
    let next = state;
    if (next.held.length > 0 || next.earlyFeedback.length > 0) {
      const r = release(next, now, this.opts);
      next = r.state;
      out.push(...r.pairs);
      this.counts.lostFeedback += r.expiredFeedback.length;
    }
    if (!next.closed) {
      const step = expire(next, now, this.opts.idleTimeoutMs, this.opts);
      if (step.lateFeedback) this.count('feedback:late-feedback', step.lateFeedback);
      next = step.state;
      out.push(...step.pairs);
    }
    if (forgettable(next, now, this.opts)) {
      // As the live service forgets it (what a turn of the session finds later is the same).
      const fresh = forget(next);
      if (fresh) this.put(key, fresh);
      else this.sessions.delete(key);
      return;
    }
    if (next !== state) this.put(key, next);
  }

  /** Runs what fell due by `now`. */
  private advance(now: number, out: TurnPair[]): void {
    while (this.due.size > 0 && this.due.peek() <= now) {
      const [, key] = this.due.pop()!;
      const s = this.sessions.get(key);
      // A stale entry (the session changed since): its real due time decides.
      if (s && this.dueOf(s) <= now) this.tick(key, now, out);
    }
  }

  private count(reason: string, n = 1): void {
    this.counts.ignored[reason] = (this.counts.ignored[reason] ?? 0) + n;
  }

  /**
   * Applies one event of the merged history, after what fell due by `watermark` (its entry of
   * `watermarks`: no later event is older); returns the pairs it and what fell due made.
   */
  apply(e: HistoryEvent, watermark: number): TurnPair[] {
    const out: TurnPair[] = [];
    this.advance(watermark, out);
    const key = e.value.sessionId;
    const prev = this.sessions.get(key);
    const step: AssemblerStep = e.topicId === 'turns' ? applyTurn(prev, e.value, this.opts) : applyFeedback(prev, e.value, this.opts);
    if (step.ignored) this.count(`${e.topicId}:${step.ignored}`);
    if (step.lateFeedback) this.count('feedback:late-feedback', step.lateFeedback);
    if (step.state !== prev) this.put(key, step.state);
    out.push(...step.pairs);
    return out;
  }

  /**
   * The end of the range: sessions idle at `wallNow` (history is usually older than the idle
   * timeout) are closed, as of the moment they went idle, and every held pair is released: no
   * record of the range is left to reach it. Sessions still active at `wallNow` stay open, as in
   * the live pipeline.
   */
  finish(wallNow: number): TurnPair[] {
    const out: TurnPair[] = [];
    for (const key of [...this.sessions.keys()]) {
      let s = this.sessions.get(key)!;
      if (idleAt(s, this.opts) <= wallNow) {
        const step = expire(s, wallNow, this.opts.idleTimeoutMs, this.opts);
        if (step.lateFeedback) this.count('feedback:late-feedback', step.lateFeedback);
        s = step.state;
        out.push(...step.pairs);
      }
      if (s.held.length > 0 || s.earlyFeedback.length > 0) {
        const r = release(s, Number.POSITIVE_INFINITY, this.opts);
        s = r.state;
        out.push(...r.pairs);
        this.counts.lostFeedback += r.expiredFeedback.length;
      }
      this.sessions.set(key, s);
    }
    return out;
  }
}

/**
 * One partition's history through `asm`, as the replay runs it: the two topics merged by event
 * time, each event applied after what fell due by its watermark; for each event the pairs it
 * made, then (`event` null) the pairs of the range's end, at wall time `finishAt()`.
 */
export function* assemblePartition(
  asm: EventTimeAssembler,
  turns: readonly HistoryEvent[],
  feedback: readonly HistoryEvent[],
  finishAt: () => number,
): Generator<{ event: HistoryEvent | null; pairs: TurnPair[] }> {
  const merged = [...mergeByEventTime(turns, feedback)];
  const marks = watermarks(merged);
  for (const [i, event] of merged.entries()) yield { event, pairs: asm.apply(event, marks[i]) };
  yield { event: null, pairs: asm.finish(finishAt()) };
}
