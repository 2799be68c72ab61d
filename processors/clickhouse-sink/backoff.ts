/** Exponential backoff with jitter, capped: the delay before retry number `attempt` (1-based). */
export function backoffMs(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
  // ±20 % jitter so several sinks do not hammer a recovering server in lockstep.
  return Math.max(1, Math.min(maxMs, Math.round(exp * (0.8 + 0.4 * random()))));
}
