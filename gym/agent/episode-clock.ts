/**
 * An episode's wall clock: one signal that aborts when the task's `timeout_s` runs out or when
 * the caller aborts (Ctrl-C), and which of the two it was.
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';

export interface EpisodeClock {
  /** Aborts at the deadline or with the caller's signal. */
  readonly signal: AbortSignal;
  /** The deadline passed (the caller did not abort first). */
  timedOut(): boolean;
  /** The caller aborted. */
  callerAborted(): boolean;
  /** Stops the timer. */
  dispose(): void;
}

/** A clock of `timeoutMs` that also follows `external`. */
export function episodeClock(timeoutMs: number, external?: AbortSignal): EpisodeClock {
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort(new TurnstreamError(ErrorCodes.TIMEOUT, `the episode ran past its ${Math.round(timeoutMs / 1000)} s`));
  }, timeoutMs);
  const forward = (): void => {
    if (!ac.signal.aborted) ac.abort(external?.reason ?? aborted());
  };
  if (external?.aborted) forward();
  else external?.addEventListener('abort', forward, { once: true });
  return {
    signal: ac.signal,
    timedOut: () => timedOut && !(external?.aborted ?? false),
    callerAborted: () => external?.aborted ?? false,
    dispose: () => {
      clearTimeout(timer);
      external?.removeEventListener('abort', forward);
    },
  };
}

/** The error a rollout aborted by its caller rejects with. */
export const aborted = (): TurnstreamError => new TurnstreamError(ErrorCodes.ABORTED, 'the rollout was aborted');
