/** Assertions on what `Promise.allSettled` gives back. */
import assert from 'node:assert/strict';

/** Every one of `results` was rejected, each with an error of `code` and exactly `message`. */
export function assertEachRejected(results: Array<PromiseSettledResult<unknown>>, expected: { code: string; message: string }): void {
  for (const r of results) {
    assert.equal(r.status, 'rejected');
    const err = (r as PromiseRejectedResult).reason as Error & { code?: string };
    assert.equal(err.code, expected.code);
    assert.equal(err.message, expected.message);
  }
}
