/**
 * The one retrier. Whether an error earns another attempt is the error's own business: its
 * `retriable` flag (core/errors.ts `isRetriable`), unless a caller narrows it. The first attempt
 * is a plain call, so work that succeeds (nearly all of it: every record a processor handles)
 * pays nothing for the retry machinery; from the first failure on, p-retry drives the backoff.
 */
import pRetry from 'p-retry';
import { isRetriable } from './errors.ts';

export interface RetryOptions {
  /** Attempts in all, the first one included. @default Infinity */
  attempts?: number;
  /** Delay before the second attempt, in ms; it doubles after each failure. @default 200 */
  baseMs?: number;
  /** Longest delay between attempts, in ms. @default 30_000 */
  maxMs?: number;
  /** No attempt starts after this many ms from the first one. @default Infinity */
  maxTimeMs?: number;
  /** Stops waiting and retrying. */
  signal?: AbortSignal;
  /** Whether an error earns another attempt. @default isRetriable */
  retryIf?: (err: unknown) => boolean;
  /** Called after a failed attempt that will be retried (attempt counts from 1). */
  onRetry?: (err: unknown, attempt: number) => void;
}

/** Calls `fn` until it succeeds, an error is not worth retrying, or attempts or time run out; throws the last error. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions = {}): Promise<T> {
  const started = performance.now();
  let first: unknown;
  try {
    return await fn(1);
  } catch (err) {
    first = err;
  }
  const retryIf = o.retryIf ?? isRetriable;
  // The first failure is handed to p-retry as its first attempt's, so that it alone decides
  // (backoff, time limit, abort, and p-retry's rule that a TypeError other than a network one is a bug).
  return pRetry((n) => (n === 1 ? Promise.reject(first) : fn(n)), {
    retries: Math.max(0, (o.attempts ?? Number.POSITIVE_INFINITY) - 1),
    minTimeout: o.baseMs ?? 200,
    maxTimeout: o.maxMs ?? 30_000,
    factor: 2,
    maxRetryTime: Math.max(0, (o.maxTimeMs ?? Number.POSITIVE_INFINITY) - (performance.now() - started)),
    signal: o.signal,
    shouldRetry: ({ error }) => retryIf(error),
    onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
      if (retriesLeft > 0 && retryIf(error)) o.onRetry?.(error, attemptNumber);
    },
  });
}
