/**
 * The session assembler service: turns + feedback (keyed by session) → pairs, with per-session
 * state in the changelog-backed store (`turnstream.session-state.v1`) and idle timeouts run by
 * the runtime's punctuator. Outputs, state and offsets commit in one transaction.
 *
 * Ready pairs are held in the state for the feedback grace period (see `feedbackGraceMs`) and
 * emitted by the punctuator once the stream clock has passed it, so feedback read after the next
 * turn (two topics, no order between them) still reaches its pair; held pairs survive restarts
 * with the rest of the state. The work itself, records and punctuations without Kafka, is
 * session-assembler/stream-assembler.ts.
 */
import type { SessionState, TurnPair } from '../../schemas/index.ts';
import { runProcessor, type ProcessorHandle } from '../../streams/index.ts';
import { counter, type Logger } from '../../core/index.ts';
import { emptySession } from './session-state.ts';
import { resolveAssemblerOptions, type SessionAssemblerOptions } from './options.ts';
import { StreamAssembler, type AssemblerRecord } from './stream-assembler.ts';
import { StreamClock } from './stream-clock.ts';
import { serviceRuntime, type ServiceOptions } from '../service-options.ts';

export interface SessionAssemblerServiceOptions extends ServiceOptions, SessionAssemblerOptions {
  /** How often idle sessions are looked for, in ms. @default min(60_000, idleTimeoutMs / 4), at least 100 */
  expireIntervalMs?: number;
  /** How often held pairs whose grace period has passed are emitted, in ms. @default min(1000, feedbackGraceMs / 5), at least 50 */
  releaseIntervalMs?: number;
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
  let log: Logger | undefined = options.logger;
  const assembler = new StreamAssembler(opts, clock, {
    pair: (p) => metrics.pairs.inc({ end: p.endMarker ?? 'none' }),
    ignored: (kind, reason, key, detail) => {
      metrics.ignored.inc({ kind, reason });
      log?.debug({ key, reason, ...detail }, `${kind} event ignored`);
    },
    closed: (reason) => metrics.closed.inc({ reason }),
    heldFeedback: () => metrics.lateAttached.inc(),
  });
  return runProcessor<SessionState>({
    ...serviceRuntime('session-assembler', options),
    inputs: ['turns', 'feedback'],
    state: { topic: 'sessionState' },
    onAssigned: () => clock.rejoined(Date.now()),
    // A session restored from a partition taken over must not close idle before its backlog is read.
    onAcquired: (partitions) =>
      clock.acquired(
        partitions.flatMap((p) => [`turns:${p}`, `feedback:${p}`]),
        Date.now(),
      ),
    // Each step is pure and quick: a fetched batch goes in one call, and a session's state is
    // written to the changelog once per batch, however many of its events the batch held.
    async handleBatch(records, ctx) {
      log = ctx.logger;
      assembler.handleBatch(records as unknown as AssemblerRecord[], ctx.state, Date.now(), (p) => ctx.emit('pairs', p.sessionId, p));
    },
    punctuate: {
      intervalMs: tick,
      async run(ctx) {
        log = ctx.logger;
        assembler.punctuate(ctx.state, ctx.now, (p) => ctx.emit('pairs', p.sessionId, p));
      },
    },
  });
}
