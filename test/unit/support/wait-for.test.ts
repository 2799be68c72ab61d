import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../support/wait-for.ts';

test('waitFor: a condition that holds already returns at once, with its value', async () => {
  let calls = 0;
  const t0 = Date.now();
  const value = await waitFor('a ready value', () => (calls++, { id: 7 }), { intervalMs: 10_000 });
  assert.deepEqual(value, { id: 7 });
  assert.equal(calls, 1);
  assert.ok(Date.now() - t0 < 1000, 'no pause before the first check');
});

test('waitFor: polls until the condition holds, sync or async, and returns the first truthy value', async () => {
  let n = 0;
  assert.equal(await waitFor('the third check', () => ++n >= 3 && n, { intervalMs: 1 }), 3);
  let m = 0;
  assert.equal(await waitFor('an async check', async () => (++m === 2 ? 'ready' : ''), { intervalMs: 1 }), 'ready');
});

test('waitFor: a check that throws is "not yet"; on timeout the error names what was awaited and the last error', async () => {
  let n = 0;
  assert.equal(
    await waitFor('a table that appears', () => {
      if (++n < 3) throw new Error('no such table');
      return true;
    }),
    true,
  );
  await assert.rejects(
    waitFor(
      'the consumer to join',
      () => {
        throw new Error('not joined');
      },
      { timeoutMs: 30, intervalMs: 5 },
    ),
    (err: Error) => /timed out after 30 ms waiting for the consumer to join \(last error: not joined\)/.test(err.message),
  );
  await assert.rejects(
    waitFor('never', () => false, { timeoutMs: 20, intervalMs: 5 }),
    /timed out after 20 ms waiting for never$/,
  );
});
