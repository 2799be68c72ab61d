/**
 * One writer per cached file across processes: two `turnstream model pull` (or two starting
 * gateways) fetching the same model take turns on a lock next to the file (core's file lock:
 * an atomic mkdir, refreshed while held, taken over when its holder died). The second one then
 * finds the file in place. Integrity does not rest on the lock: every file is verified before it
 * is renamed into place.
 */
import { withFileLock, type FileLockOptions } from '../../core/index.ts';

/** Options of {@link withCacheLock}. */
export type CacheLockOptions = Omit<FileLockOptions, 'what'>;

/** Runs `fn` holding the lock of `target` (a file path; the lock is `<target>.lock`). */
export function withCacheLock<T>(target: string, fn: () => Promise<T>, options: CacheLockOptions = {}): Promise<T> {
  return withFileLock(target, fn, { ...options, what: 'the model cache lock' });
}
