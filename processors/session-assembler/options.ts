/** How the assembler treats a session's last main turn when nothing but the end marker follows it. */
import { SESSION_ASSEMBLER_DEFAULTS } from '../defaults.ts';

export type EndPolicy = 'drop' | 'masked';

export interface SessionAssemblerOptions {
  /**
   * A session with no turn (main or side) for this long is closed with `IDLE_TIMEOUT`, as of the
   * moment it went idle. Feedback is about earlier turns and does not keep a session open (it
   * is read from another topic, at its own pace, so it could not without making the pairs depend
   * on the order of reading).
   * `SESSION_IDLE_TIMEOUT_MS` @default SESSION_ASSEMBLER_DEFAULTS.idleTimeoutMs (30 min)
   */
  idleTimeoutMs?: number;
  /**
   * The last main turn of a closed session, when no feedback arrived for it:
   * `masked` emits its pair with the end marker and no next state (the judge scores it 0 without
   * a model call, the sample builder turns it into a fully masked sample, so it only changes the
   * trainer's denominator, as the reference does; analytics see every main turn paired);
   * `drop` emits nothing. A last turn WITH feedback is always emitted: the feedback is its next
   * state.
   * `SESSION_END_POLICY` @default SESSION_ASSEMBLER_DEFAULTS.endPolicy ('masked')
   */
  endPolicy?: EndPolicy;
  /**
   * How many recent turn and feedback ids a session remembers for dedupe.
   * @default SESSION_ASSEMBLER_DEFAULTS.maxRecentIds (512)
   */
  maxRecentIds?: number;
  /**
   * Feedback grace period, in stream time. A pair that is ready (its next turn arrived, or the
   * session closed) is held this long before it is emitted, and 👍/👎/text feedback on its turn
   * that arrives meanwhile is attached to it. Turns and feedback are separate topics, so in a
   * backlog (a restart, a replay, an outbox drained late) a user's 👎 is often read after the
   * next turn of its session; without the grace it would be lost as `late-feedback`. Feedback
   * naming a turn not read yet is kept as long, waiting for its turn. Stream time is the event
   * time of the slowest partition being read (the wall clock once caught up), so a backlog
   * holds nothing longer than live traffic does. 0 emits pairs at once.
   * `FEEDBACK_GRACE_MS` @default SESSION_ASSEMBLER_DEFAULTS.feedbackGraceMs (5000)
   */
  feedbackGraceMs?: number;
  /**
   * A closed session's state (kept for dedupe and its turn count) is forgotten this long after
   * its last turn; a turn of the same session id that comes later starts it afresh (turn index 0).
   * @default SESSION_ASSEMBLER_DEFAULTS.closedRetentionMs (1 day)
   */
  closedRetentionMs?: number;
  /** Replay tag stamped on pairs; null on the live pipeline. @default null */
  tag?: string | null;
}

export interface ResolvedAssemblerOptions {
  idleTimeoutMs: number;
  endPolicy: EndPolicy;
  maxRecentIds: number;
  feedbackGraceMs: number;
  closedRetentionMs: number;
  tag: string | null;
}

export const DEFAULT_IDLE_TIMEOUT_MS = SESSION_ASSEMBLER_DEFAULTS.idleTimeoutMs;
export const DEFAULT_FEEDBACK_GRACE_MS = SESSION_ASSEMBLER_DEFAULTS.feedbackGraceMs;
export const DEFAULT_CLOSED_RETENTION_MS = SESSION_ASSEMBLER_DEFAULTS.closedRetentionMs;

export function resolveAssemblerOptions(opts: SessionAssemblerOptions = {}): ResolvedAssemblerOptions {
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const maxRecentIds = opts.maxRecentIds ?? SESSION_ASSEMBLER_DEFAULTS.maxRecentIds;
  if (!(idleTimeoutMs > 0)) throw new RangeError(`idleTimeoutMs must be > 0, got ${idleTimeoutMs}`);
  const feedbackGraceMs = opts.feedbackGraceMs ?? DEFAULT_FEEDBACK_GRACE_MS;
  if (!(maxRecentIds >= 1)) throw new RangeError(`maxRecentIds must be >= 1, got ${maxRecentIds}`);
  if (!(feedbackGraceMs >= 0)) throw new RangeError(`feedbackGraceMs must be >= 0, got ${feedbackGraceMs}`);
  const closedRetentionMs = opts.closedRetentionMs ?? DEFAULT_CLOSED_RETENTION_MS;
  if (!(closedRetentionMs > 0)) throw new RangeError(`closedRetentionMs must be > 0, got ${closedRetentionMs}`);
  return {
    idleTimeoutMs,
    endPolicy: opts.endPolicy ?? SESSION_ASSEMBLER_DEFAULTS.endPolicy,
    maxRecentIds,
    feedbackGraceMs,
    closedRetentionMs,
    tag: opts.tag ?? null,
  };
}
