/** One check for many settings read into a map (server.properties, -D flags): each key's exact value. */
import assert from 'node:assert/strict';

/** Each key of `expected` has exactly its value in `map`; one comparison, so a failure shows every difference. */
export function assertEntries(map: ReadonlyMap<string, string>, expected: Record<string, string | undefined>): void {
  assert.deepEqual(Object.fromEntries(Object.keys(expected).map((k) => [k, map.get(k)])), expected);
}
