/**
 * Waiting on a condition instead of the clock: the one polling helper of the test tree.
 * A fixed sleep before an assertion is either too short on a loaded machine (a flaky test) or
 * too long everywhere else (a slow one); `waitFor` returns as soon as the condition holds and
 * fails, naming what it waited for, when it does not hold in time.
 */
import { setTimeout as pause } from 'node:timers/promises';

export interface WaitForOptions {
  /**
   * How long the condition may take before the wait fails.
   * @default 30_000
   */
  timeoutMs?: number;
  /**
   * The pause between two checks. Raise it for checks that cost something (reading a topic,
   * querying ClickHouse).
   * @default 50
   */
  intervalMs?: number;
}

/** A value that satisfies `waitFor`: anything but false, 0, '', null and undefined. */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Checks `predicate` now and then every `intervalMs` until it returns a truthy value, and
 * resolves with that value (so a wait can hand back what it found). A predicate that throws
 * counts as "not yet"; its last error is named if the wait times out.
 *
 * @param what - what is awaited, for the error: `'the consumer to join'`.
 */
export async function waitFor<T>(what: string, predicate: () => T | Promise<T>, options: WaitForOptions = {}): Promise<Truthy<T>> {
  const { timeoutMs = 30_000, intervalMs = 50 } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await predicate();
      if (value) return value as Truthy<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const cause = lastError === undefined ? '' : ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`, { cause: lastError });
    }
    await pause(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}
