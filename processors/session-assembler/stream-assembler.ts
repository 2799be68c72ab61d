/**
 * The session assembler as the live service runs it, without Kafka: fetched batches of turns and
 * feedback go through the pure steps (session-assembler.ts) against the per-session state, and
 * punctuations, on a timer, release held pairs and close idle sessions by the stream clock
 * (stream-clock.ts). The service (session-assembler-service.ts) gives it the runtime's state
 * store and emitter; a test gives it a map and any schedule of batches and punctuations, to check
 * that the live pairs do not depend on that schedule.
 */
import type { Feedback, SessionState, Turn, TurnPair } from '../../schemas/index.ts';
import type { ResolvedAssemblerOptions } from './options.ts';
import {
  applyFeedback,
  applyTurn,
  expire,
  forget,
  forgettable,
  release,
  type AssemblerStep,
  type IgnoredReason,
} from './session-assembler.ts';
import type { StreamClock } from './stream-clock.ts';

/** One input record, decoded. */
export type AssemblerRecord = {
  key: string;
  partition: number;
  offset: string;
  /** Records after this one in its partition when it was fetched. */
  lag: number;
} & ({ topicId: 'turns'; value: Turn } | { topicId: 'feedback'; value: Feedback });

/** The per-session state, by session id (the runtime's state store). */
export interface AssemblerState {
  get(key: string): SessionState | undefined;
  put(key: string, state: SessionState): void;
  delete(key: string): void;
  entries(): Iterable<[string, SessionState]>;
}

/** What the service counts and logs. */
export interface AssemblerObserver {
  pair?(pair: TurnPair): void;
  ignored?(kind: 'turns' | 'feedback', reason: IgnoredReason, key: string, detail: Record<string, unknown>): void;
  closed?(reason: string): void;
  /** Feedback that reached a pair held for the grace period (it would have been late without it). */
  heldFeedback?(): void;
}

export class StreamAssembler {
  constructor(
    private readonly opts: ResolvedAssemblerOptions,
    private readonly clock: StreamClock,
    private readonly observer: AssemblerObserver = {},
  ) {}

  private emitAll(pairs: readonly TurnPair[], emit: (pair: TurnPair) => void): void {
    for (const p of pairs) {
      emit(p);
      this.observer.pair?.(p);
    }
  }

  /**
   * A fetched batch, read at wall time `wallNow`: each record is applied at once, and a session's
   * state is written once however many of its records the batch held.
   */
  handleBatch(
    records: readonly AssemblerRecord[],
    state: Pick<AssemblerState, 'get' | 'put'>,
    wallNow: number,
    emit: (pair: TurnPair) => void,
  ): void {
    const o = this.observer;
    for (const record of records) {
      const prev = state.get(record.key);
      const source = `${record.topicId}:${record.partition}`;
      let step: AssemblerStep;
      if (record.topicId === 'turns') {
        this.clock.observe(source, record.value.completedAt, wallNow, record.lag, Number(record.offset));
        step = applyTurn(prev, record.value, this.opts);
      } else {
        this.clock.observe(source, record.value.createdAt, wallNow, record.lag, Number(record.offset));
        step = applyFeedback(prev, record.value, this.opts);
        if (!step.ignored && prev && step.state.held !== prev.held) o.heldFeedback?.();
      }
      if (step.ignored) o.ignored?.(record.topicId, step.ignored, record.key, { offset: record.offset });
      for (let i = 0; i < (step.lateFeedback ?? 0); i++) o.ignored?.('feedback', 'late-feedback', record.key, { offset: record.offset });
      if (step.state !== prev) state.put(record.key, step.state);
      if (step.closedIdle) o.closed?.('IDLE_TIMEOUT');
      const closedNow = step.state.closed && !prev?.closed && !(step.closedIdle && step.state.closedReason === 'IDLE_TIMEOUT');
      if (closedNow) o.closed?.(step.state.closedReason ?? 'unknown');
      this.emitAll(step.pairs, emit);
    }
    // The runtime runs a partition's batches of both topics one after the other; the clock waits
    // for the other topic's batch of the partition (it may hold a 👍 for a pair these turns complete).
    const last = records.at(-1);
    if (last) this.clock.expect(`${last.topicId === 'turns' ? 'feedback' : 'turns'}:${last.partition}`, wallNow);
  }

  /** A punctuation at wall time `wallNow`: what fell due by the stream clock goes out; sessions closed long ago are forgotten. */
  punctuate(state: AssemblerState, wallNow: number, emit: (pair: TurnPair) => void): void {
    const entries = [...state.entries()];
    if (entries.length === 0) return; // (the clock's start-up wait begins with the first state)
    const now = this.clock.now(wallNow);
    const o = this.observer;
    for (const [key, before] of entries) {
      let next = before;
      const out: TurnPair[] = [];
      if (next.held.length > 0 || next.earlyFeedback.length > 0) {
        const r = release(next, now, this.opts);
        next = r.state;
        out.push(...r.pairs);
        for (const f of r.expiredFeedback) o.ignored?.('feedback', 'unknown-turn', key, { feedbackId: f.feedbackId, turnId: f.turnId });
      }
      if (!next.closed) {
        const step = expire(next, now, this.opts.idleTimeoutMs, this.opts);
        if (step.state !== next) o.closed?.('IDLE_TIMEOUT');
        for (let i = 0; i < (step.lateFeedback ?? 0); i++) o.ignored?.('feedback', 'late-feedback', key, {});
        next = step.state;
        out.push(...step.pairs);
      }
      if (forgettable(next, now, this.opts)) {
        // Pairs released in this very tick still go out before the session is forgotten.
        this.emitAll(out, emit);
        const fresh = forget(next);
        if (fresh) state.put(key, fresh);
        else state.delete(key);
        continue;
      }
      if (next !== before) state.put(key, next);
      this.emitAll(out, emit);
    }
  }
}
