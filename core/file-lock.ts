/**
 * One holder at a time across processes: a lock next to a path (proper-lockfile: an atomic
 * mkdir of `<target>.lock`, refreshed while held, taken over when its holder died). Two
 * processes fetching the same model, or two gym runs installing bubblewrap, take turns on it.
 * proper-lockfile is loaded on first use, so the commands that never lock do not load it.
 */
import { ErrorCodes, TurnstreamError } from './errors.ts';

/** Options of {@link withFileLock}. */
export interface FileLockOptions {
  /** What is locked, for the errors: `the model cache lock`. @default 'the lock of <target>' */
  what?: string;
  /** Stops waiting for the lock (TS_ERR_ABORTED). @default undefined */
  signal?: AbortSignal;
  /** Called once when another process holds the lock and this one starts waiting. */
  onWait?: () => void;
  /** A lock not refreshed for this long is stale (its holder died) and is taken over. @default 20000 */
  staleMs?: number;
  /** Pause between attempts while waiting. @default 500 */
  pollMs?: number;
}

const sleep = (ms: number, signal: AbortSignal | undefined, cancelled: () => TurnstreamError): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort(): void {
      clearTimeout(timer);
      reject(cancelled());
    }
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
  });

/**
 * Runs `fn` holding the lock of `target` (a path that need not exist; the lock is `<target>.lock`).
 * @throws TurnstreamError TS_ERR_ABORTED when `signal` aborts the wait; TS_ERR_UNAVAILABLE when the lock cannot be made
 */
export async function withFileLock<T>(target: string, fn: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const { default: lockfile } = await import('proper-lockfile');
  const what = options.what ?? `the lock of ${target}`;
  const cancelled = () => new TurnstreamError(ErrorCodes.ABORTED, `cancelled while waiting for ${what}`);
  const stale = options.staleMs ?? 20_000;
  let waiting = false;
  let release: (() => Promise<void>) | undefined;
  while (!release) {
    if (options.signal?.aborted) throw cancelled();
    try {
      release = await lockfile.lock(target, {
        realpath: false,
        stale,
        update: Math.max(1000, Math.floor(stale / 4)),
        retries: 0,
        // A lock found compromised (not refreshed in time) is not fatal: what is done under it is
        // checked again by the next holder (a model file's sha256, bubblewrap's presence).
        onCompromised: () => undefined,
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') {
        throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `cannot take ${what} (${target}.lock): ${(err as Error).message}`, {
          cause: err,
          retriable: false,
        });
      }
      if (!waiting) options.onWait?.();
      waiting = true;
      await sleep(options.pollMs ?? 500, options.signal, cancelled);
    }
  }
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined); // already released (compromised and taken over): nothing to undo
  }
}
