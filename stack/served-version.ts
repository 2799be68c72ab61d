/**
 * The protocol between a run and its learner and gateway (eval's pipeline runs, gym's seeds):
 * after a batch, wait until the learner has published a version past the one the batch ran on,
 * then until the gateway serves it (it hot-swaps from the weights topic).
 */
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import type { LearnerHandle } from '../trainer/index.ts';

export interface AwaitServedVersionOptions {
  learner: Pick<LearnerHandle, 'stats'>;
  /** Waits for a version above this one (the one the batch ran on). */
  after: number;
  /** The version the gateway serves now (gatewayVersionProbe). */
  probe: () => Promise<number>;
  /**
   * The learner's batch count before the batch: once it has taken one more without publishing
   * past `after` (its KL guard undid the step, a step not taken), the wait ends with `undone`.
   * @default the wait is for a version only
   */
  batchesBefore?: number;
  /** For both waits together, ms. */
  timeoutMs: number;
  /** Stops waiting (rejects with TS_ERR_ABORTED). */
  signal?: AbortSignal;
  /** @default 250 */
  pollMs?: number;
}

export interface ServedVersion {
  /** The learner's last published version (not above `after` when none came in time). */
  published: number;
  /** The version the gateway served at the last probe (-1: not probed before the deadline). */
  served: number;
  /** A version above `after` is published and served. */
  ok: boolean;
  /** The learner took the batch and published nothing (see `batchesBefore`). */
  undone: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the learner has published past `after` (or, with `batchesBefore`, has taken the
 * batch and published nothing), then until the gateway serves that version, both within
 * `timeoutMs`; says how far it got rather than throwing on the deadline (the caller decides
 * whether a batch without a version is an error).
 */
export async function awaitServedVersion(o: AwaitServedVersionOptions): Promise<ServedVersion> {
  const pollMs = o.pollMs ?? 250;
  const deadline = Date.now() + o.timeoutMs;
  const check = (): void => {
    if (o.signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'stopped while waiting for the next version');
  };
  const taken = (): boolean => o.batchesBefore !== undefined && o.learner.stats().batches > o.batchesBefore;
  while (o.learner.stats().version <= o.after && !taken() && Date.now() < deadline) {
    check();
    await sleep(pollMs);
  }
  const published = o.learner.stats().version;
  if (published <= o.after) return { published, served: -1, ok: false, undone: taken() };
  let served = -1;
  while (Date.now() < deadline) {
    check();
    served = await o.probe();
    if (served >= published) break;
    await sleep(pollMs);
  }
  return { published, served, ok: served >= published, undone: false };
}

/**
 * The version a gateway serves: a one-token side turn (recorded, never trained) in session
 * `sessionId`, its `x-policy-version` header (-1 when it has none).
 */
export function gatewayVersionProbe(url: string, sessionId: string): () => Promise<number> {
  return async () => {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-turn-type': 'side', 'x-session-id': sessionId },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
    });
    await res.text();
    return Number(res.headers.get('x-policy-version') ?? -1);
  };
}
