/**
 * The session assembler service: turns + feedback (keyed by session) → pairs, with per-session
 * state in the changelog-backed store (`turnstream.session-state.v1`) and idle timeouts run by
 * the runtime's punctuator. Outputs, state and offsets commit in one transaction.
 */
import type { Feedback, SessionState, Turn } from '../schemas/index.ts';
import { counter, runProcessor, type ProcessorHandle } from '../streams/index.ts';
import { applyFeedback, applyTurn, expire, resolveAssemblerOptions, StreamClock, type AssemblerStep, type SessionAssemblerOptions } from './session-assembler/index.ts';
import { defaultGroupId, type ServiceOptions } from './service-options.ts';

export interface SessionAssemblerServiceOptions extends ServiceOptions, SessionAssemblerOptions {
  /** How often idle sessions are looked for, in ms. @default min(60_000, idleTimeoutMs / 4), at least 100 */
  expireIntervalMs?: number;
  /** A closed session's state (kept for dedupe) is deleted this long after its last activity. @default 86_400_000 (1 day) */
  closedRetentionMs?: number;
  /** No record for this long means the consumer caught up: idle timeouts follow the wall clock. @default 5000 */
  quietMs?: number;
}

const metrics = {
  pairs: counter('turnstream_assembler_pairs_total', 'Pairs emitted', ['end']),
  ignored: counter('turnstream_assembler_ignored_total', 'Events ignored (duplicate, late, unknown turn)', ['kind', 'reason']),
  closed: counter('turnstream_assembler_sessions_closed_total', 'Sessions closed', ['reason']),
};

export function startSessionAssembler(options: SessionAssemblerServiceOptions): Promise<ProcessorHandle> {
  const opts = resolveAssemblerOptions(options);
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
    logger: options.logger,
    inputs: ['turns', 'feedback'],
    state: { topic: 'sessionState' },
    async handle(record, ctx) {
      const prev = ctx.state.get(record.key);
      let step: AssemblerStep;
      if (record.topicId === 'turns') {
        const turn = record.value as Turn;
        clock.observe(record.partition, turn.completedAt, Date.now());
        step = applyTurn(prev, turn, opts);
      } else {
        const fb = record.value as Feedback;
        clock.observe(record.partition, fb.createdAt, Date.now());
        step = applyFeedback(prev, fb, opts);
      }
      if (step.ignored) {
        metrics.ignored.inc({ kind: record.topicId, reason: step.ignored });
        ctx.logger.debug({ key: record.key, offset: record.offset, reason: step.ignored }, `${record.topicId} event ignored`);
      }
      if (step.state !== prev) ctx.state.put(record.key, step.state);
      if (step.state.closed && !prev?.closed) metrics.closed.inc({ reason: step.state.closedReason ?? 'unknown' });
      emitPairs(step, (k, p) => ctx.emit('pairs', k, p));
    },
    punctuate: {
      intervalMs: options.expireIntervalMs ?? Math.max(100, Math.min(60_000, Math.floor(opts.idleTimeoutMs / 4))),
      async run(ctx) {
        const now = clock.now(ctx.now);
        for (const [key, state] of [...ctx.state.entries()]) {
          if (state.closed) {
            if (now - state.lastActivityAt >= closedRetentionMs) ctx.state.delete(key);
            continue;
          }
          const step = expire(state, now, opts.idleTimeoutMs, opts);
          if (step.state === state) continue;
          ctx.state.put(key, step.state);
          metrics.closed.inc({ reason: 'IDLE_TIMEOUT' });
          emitPairs(step, (k, p) => ctx.emit('pairs', k, p));
        }
      },
    },
  });
}
