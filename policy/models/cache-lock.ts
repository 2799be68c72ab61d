/**
 * One writer per cached file across processes: two `turnstream model pull` (or two starting
 * gateways) fetching the same model take turns on a lock next to the file (proper-lockfile:
 * an atomic mkdir, refreshed while held, taken over when its holder died). The second one then
 * finds the file in place. Integrity does not rest on the lock: every file is verified before it
 * is renamed into place.
 */
import lockfile from 'proper-lockfile';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';

/** Options of {@link withCacheLock}. */
export interface CacheLockOptions {
  /** Stops waiting for the lock (TS_ERR_ABORTED). @default undefined */
  signal?: AbortSignal;
  /** Called once when another process holds the lock and this one starts waiting. */
  onWait?: () => void;
  /** A lock not refreshed for this long is stale (its holder died) and is taken over. @default 20000 */
  staleMs?: number;
  /** Pause between attempts while waiting. @default 500 */
  pollMs?: number;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort(): void {
      clearTimeout(timer);
      reject(new TurnstreamError(ErrorCodes.ABORTED, 'cancelled while waiting for the model cache lock'));
    }
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
  });

/** Runs `fn` holding the lock of `target` (a file path; the lock is `<target>.lock`). */
export async function withCacheLock<T>(target: string, fn: () => Promise<T>, options: CacheLockOptions = {}): Promise<T> {
  const stale = options.staleMs ?? 20_000;
  let waiting = false;
  let release: (() => Promise<void>) | undefined;
  while (!release) {
    if (options.signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'cancelled while waiting for the model cache lock');
    try {
      release = await lockfile.lock(target, {
        realpath: false,
        stale,
        update: Math.max(1000, Math.floor(stale / 4)),
        retries: 0,
        // A lock found compromised (not refreshed in time) is not fatal here: the files written under
        // it are verified by sha256 before they are renamed into place.
        onCompromised: () => undefined,
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') {
        throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `cannot lock ${target}: ${(err as Error).message}`, {
          cause: err,
          retriable: false,
        });
      }
      if (!waiting) options.onWait?.();
      waiting = true;
      await sleep(options.pollMs ?? 500, options.signal);
    }
  }
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined); // already released (compromised and taken over): nothing to undo
  }
}
