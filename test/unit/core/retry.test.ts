import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { retry } from '../../../core/retry.ts';

const retriable = () => new TurnstreamError(ErrorCodes.UNAVAILABLE, 'away', { retriable: true });
const permanent = () => new TurnstreamError(ErrorCodes.INVALID_INPUT, 'bad', { retriable: false });

/** A function failing with `errors` in turn, then answering 'ok'; it records each attempt number. */
function flaky(errors: unknown[]): { fn: (attempt: number) => Promise<string>; calls: number[] } {
  const calls: number[] = [];
  return {
    calls,
    fn: async (attempt) => {
      calls.push(attempt);
      const err = errors[calls.length - 1];
      if (err !== undefined) throw err;
      return 'ok';
    },
  };
}

test('a first attempt that succeeds is one call', async () => {
  const f = flaky([]);
  assert.equal(await retry(f.fn, { baseMs: 1 }), 'ok');
  assert.deepEqual(f.calls, [1]);
});

test('retriable errors are retried with attempt numbers counting on, and reported before each retry', async () => {
  const f = flaky([retriable(), retriable()]);
  const seen: number[] = [];
  assert.equal(await retry(f.fn, { baseMs: 1, onRetry: (_e, n) => seen.push(n) }), 'ok');
  assert.deepEqual(f.calls, [1, 2, 3]);
  assert.deepEqual(seen, [1, 2]);
});

test('an error that is not retriable is thrown as it is, after one call', async () => {
  const err = permanent();
  const f = flaky([err]);
  await assert.rejects(retry(f.fn, { baseMs: 1 }), (e) => e === err);
  assert.deepEqual(f.calls, [1]);
});

test('a plain error (no retriable flag) is not retried by default; retryIf widens it', async () => {
  const f = flaky([new Error('plain')]);
  await assert.rejects(retry(f.fn, { baseMs: 1 }), /plain/);
  assert.deepEqual(f.calls, [1]);
  const g = flaky([new Error('plain')]);
  assert.equal(await retry(g.fn, { baseMs: 1, retryIf: () => true }), 'ok');
  assert.deepEqual(g.calls, [1, 2]);
});

test('a TypeError is a bug, never retried, whatever retryIf says', async () => {
  const f = flaky([new TypeError('x is not a function')]);
  await assert.rejects(retry(f.fn, { baseMs: 1, retryIf: () => true }), TypeError);
  assert.deepEqual(f.calls, [1]);
});

test('attempts bound the calls; the last error is thrown', async () => {
  const last = retriable();
  const f = flaky([retriable(), retriable(), last, retriable()]);
  await assert.rejects(retry(f.fn, { baseMs: 1, attempts: 3 }), (e) => e === last);
  assert.deepEqual(f.calls, [1, 2, 3]);
  const one = flaky([retriable()]);
  await assert.rejects(retry(one.fn, { baseMs: 1, attempts: 1 }));
  assert.deepEqual(one.calls, [1]);
});

test('an abort stops the waiting between attempts', async () => {
  const ac = new AbortController();
  const f = flaky(Array.from({ length: 100 }, retriable));
  const p = retry(f.fn, { baseMs: 60_000, signal: ac.signal });
  ac.abort(new Error('stop'));
  await assert.rejects(p, /stop/);
  assert.deepEqual(f.calls, [1]);
});

test('maxTimeMs ends the retries', async () => {
  const f = flaky(Array.from({ length: 1000 }, retriable));
  await assert.rejects(retry(f.fn, { baseMs: 5, maxMs: 5, maxTimeMs: 40 }));
  assert.ok(f.calls.length >= 2 && f.calls.length < 20, `calls ${f.calls.length}`);
});
