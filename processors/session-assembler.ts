/**
 * The session assembler service: turns + feedback (keyed by session) → pairs, with per-session
 * state in the changelog-backed store (`turnstream.session-state.v1`) and idle timeouts run by
 * the runtime's punctuator. Outputs, state and offsets commit in one transaction.
 *
 * Ready pairs are held in the state for the feedback grace period (see `feedbackGraceMs`) and
 * emitted by the punctuator once the stream clock has passed it, so feedback read after the next
 * turn (two topics, no order between them) still reaches its pair; held pairs survive restarts
 * with the rest of the state.
 */
import type { Feedback, SessionState, Turn, TurnPair } from '../schemas/index.ts';
import { counter, runProcessor, type ProcessorHandle } from '../streams/index.ts';
import {
  applyFeedback,
  applyTurn,
  emptySession,
  expire,
  release,
  resolveAssemblerOptions,
  StreamClock,
  type AssemblerStep,
  type SessionAssemblerOptions,
} from './session-assembler/index.ts';
import { defaultGroupId, type ServiceOptions } from './service-options.ts';

export interface SessionAssemblerServiceOptions extends ServiceOptions, SessionAssemblerOptions {
  /** How often idle sessions are looked for, in ms. @default min(60_000, idleTimeoutMs / 4), at least 100 */
  expireIntervalMs?: number;
  /** How often held pairs whose grace period has passed are emitted, in ms. @default min(1000, feedbackGraceMs / 5), at least 50 */
  releaseIntervalMs?: number;
  /** A closed session's state (kept for dedupe) is deleted this long after its last activity. @default 86_400_000 (1 day) */
  closedRetentionMs?: number;
  /** No record for this long means the consumer caught up: idle timeouts follow the wall clock. @default 5000 */
  quietMs?: number;
}

const metrics = {
  pairs: counter('turnstream_assembler_pairs_total', 'Pairs emitted', ['end']),
  lateAttached: counter(
    'turnstream_assembler_feedback_held_total',
    'Feedback attached to a pair held for the grace period (it would have been late without it)',
  ),
  ignored: counter('turnstream_assembler_ignored_total', 'Events ignored (duplicate, late, unknown turn)', ['kind', 'reason']),
  closed: counter('turnstream_assembler_sessions_closed_total', 'Sessions closed', ['reason']),
};

function warmUpPair(): TurnPair {
  const turn = {
    turnId: 'warm-up',
    mainTurnIndex: 0,
    policyModelId: 'warm-up',
    policyVersion: 0,
    model: 'warm-up',
    requestMessages: [],
    response: { content: null, toolCalls: [], finishReason: 'stop' },
    promptTokenIds: [],
    responseTokenIds: [],
    responseLogprobs: [],
    tokenized: false,
    exactLogprobs: false,
    toolsJson: null,
    requestedAt: 0,
    completedAt: 0,
  };
  return {
    pairId: 'warm-up',
    sessionId: 'warm-up',
    userId: null,
    turn,
    nextState: [],
    endMarker: null,
    feedback: [],
    historyVerified: false,
    createdAt: 0,
    tag: null,
  };
}

export async function startSessionAssembler(options: SessionAssemblerServiceOptions): Promise<ProcessorHandle> {
  const opts = resolveAssemblerOptions(options);
  // Warm the codecs' schema caches. After this, encoding is free of I/O, so a handler's and the
  // punctuator's read-modify-write of a session's state never interleave (each runs to its
  // store update within one macrotask); a first encode fetching its schema could let a held
  // pair be released twice.
  await options.codecs.of('sessionState').encode(emptySession('warm-up', null));
  await options.codecs.of('pairs').encode(warmUpPair());
  const expireEvery = options.expireIntervalMs ?? Math.max(100, Math.min(60_000, Math.floor(opts.idleTimeoutMs / 4)));
  const releaseEvery = options.releaseIntervalMs ?? Math.max(50, Math.min(1000, Math.floor(opts.feedbackGraceMs / 5)));
  const tick = opts.feedbackGraceMs > 0 ? Math.min(expireEvery, releaseEvery) : expireEvery;
  const clock = new StreamClock(options.quietMs ?? 5000);
  const closedRetentionMs = options.closedRetentionMs ?? 24 * 3600 * 1000;
  const emitPairs = (step: AssemblerStep, emit: (key: string, p: AssemblerStep['pairs'][number]) => void) => {
    for (const p of step.pairs) {
      emit(p.sessionId, p);
      metrics.pairs.inc({ end: p.endMarker ?? 'none' });
    }
  };
  return runProcessor<SessionState>({
    name: 'session-assembler',
    kafka: options.kafka,
    codecs: options.codecs,
    groupId: options.groupId ?? defaultGroupId('session-assembler', options.codecs.naming),
    instanceId: options.instanceId,
    concurrency: options.concurrency,
    sessionTimeoutMs: options.sessionTimeoutMs,
    logger: options.logger,
    inputs: ['turns', 'feedback'],
    state: { topic: 'sessionState' },
    onAssigned: () => clock.rejoined(Date.now()),
    // Each step is pure and quick: a fetched batch goes in one call, and a session's state is
    // written to the changelog once per batch, however many of its events the batch held. The
    // runtime runs a partition's batches of both topics one after the other; the clock waits for
    // the other topic's batch of the partition (it may hold a 👍 for a pair these turns complete).
    async handleBatch(records, ctx) {
      const wallNow = Date.now();
      for (const record of records) {
        const prev = ctx.state.get(record.key);
        const source = `${record.topicId}:${record.partition}`;
        let step: AssemblerStep;
        if (record.topicId === 'turns') {
          const turn = record.value as Turn;
          clock.observe(source, turn.completedAt, wallNow, record.lag, Number(record.offset));
          step = applyTurn(prev, turn, opts);
        } else {
          const fb = record.value as Feedback;
          clock.observe(source, fb.createdAt, wallNow, record.lag, Number(record.offset));
          step = applyFeedback(prev, fb, opts);
          if (!step.ignored && prev && step.state.held !== prev.held) metrics.lateAttached.inc();
        }
        if (step.ignored) {
          metrics.ignored.inc({ kind: record.topicId, reason: step.ignored });
          ctx.logger.debug({ key: record.key, offset: record.offset, reason: step.ignored }, `${record.topicId} event ignored`);
        }
        if (step.state !== prev) ctx.state.put(record.key, step.state);
        if (step.state.closed && !prev?.closed) metrics.closed.inc({ reason: step.state.closedReason ?? 'unknown' });
        emitPairs(step, (k, p) => ctx.emit('pairs', k, p));
      }
      const last = records.at(-1);
      if (last) clock.expect(`${last.topicId === 'turns' ? 'feedback' : 'turns'}:${last.partition}`, wallNow);
    },
    punctuate: {
      intervalMs: tick,
      async run(ctx) {
        const entries = [...ctx.state.entries()];
        if (entries.length === 0) return; // (the clock's start-up wait begins with the first state)
        const now = clock.now(ctx.now);
        for (const [key, state] of entries) {
          let next = state;
          const out: AssemblerStep['pairs'] = [];
          if (next.held.length > 0 || next.earlyFeedback.length > 0) {
            const r = release(next, now, opts);
            next = r.state;
            out.push(...r.pairs);
            for (const f of r.expiredFeedback) {
              metrics.ignored.inc({ kind: 'feedback', reason: 'unknown-turn' });
              ctx.logger.debug({ key, feedbackId: f.feedbackId, turnId: f.turnId }, 'feedback for a turn never read: ignored');
            }
          }
          if (!next.closed) {
            const step = expire(next, now, opts.idleTimeoutMs, opts);
            if (step.state !== next) metrics.closed.inc({ reason: 'IDLE_TIMEOUT' });
            next = step.state;
            out.push(...step.pairs);
          } else if (now - next.lastActivityAt >= closedRetentionMs && next.held.length === 0 && next.earlyFeedback.length === 0) {
            // Pairs released in this very tick still go out before the session is forgotten.
            emitPairs({ state: next, pairs: out }, (k, p) => ctx.emit('pairs', k, p));
            ctx.state.delete(key);
            continue;
          }
          if (next !== state) ctx.state.put(key, next);
          emitPairs({ state: next, pairs: out }, (k, p) => ctx.emit('pairs', k, p));
        }
      },
    },
  });
}
