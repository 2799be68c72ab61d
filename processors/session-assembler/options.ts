/** How the assembler treats a session's last main turn when nothing but the end marker follows it. */
export type EndPolicy = 'drop' | 'masked';

export interface SessionAssemblerOptions {
  /**
   * A session with no activity (main or side turn, feedback) for this long is closed with
   * `IDLE_TIMEOUT`.
   * @default 1_800_000 (30 min)
   */
  idleTimeoutMs?: number;
  /**
   * The last main turn of a closed session, when no feedback arrived for it:
   * `masked` emits its pair with the end marker and no next state (the judge scores it 0 without
   * a model call, the sample builder turns it into a fully masked sample, so it only changes the
   * trainer's denominator, as the reference does; analytics see every main turn paired);
   * `drop` emits nothing. A last turn WITH feedback is always emitted: the feedback is its next
   * state.
   * @default 'masked'
   */
  endPolicy?: EndPolicy;
  /**
   * How many recent turn and feedback ids a session remembers for dedupe.
   * @default 512
   */
  maxRecentIds?: number;
  /** Replay tag stamped on pairs; null on the live pipeline. @default null */
  tag?: string | null;
}

export interface ResolvedAssemblerOptions {
  idleTimeoutMs: number;
  endPolicy: EndPolicy;
  maxRecentIds: number;
  tag: string | null;
}

export const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60 * 1000;

export function resolveAssemblerOptions(opts: SessionAssemblerOptions = {}): ResolvedAssemblerOptions {
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const maxRecentIds = opts.maxRecentIds ?? 512;
  if (!(idleTimeoutMs > 0)) throw new RangeError(`idleTimeoutMs must be > 0, got ${idleTimeoutMs}`);
  if (!(maxRecentIds >= 1)) throw new RangeError(`maxRecentIds must be >= 1, got ${maxRecentIds}`);
  return { idleTimeoutMs, endPolicy: opts.endPolicy ?? 'masked', maxRecentIds, tag: opts.tag ?? null };
}
