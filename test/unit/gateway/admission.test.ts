/** Admission control: the slot limit, the bounded fair queue, 429s with a Retry-After, timeouts and aborts. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission, type Slot } from '../../../gateway/admission.ts';
import { TurnstreamError } from '../../../core/errors.ts';

const overloaded = (e: unknown) =>
  e instanceof TurnstreamError && e.code === 'TS_ERR_OVERLOADED' && e.retriable && (e.retryAfterMs ?? 0) >= 1000;

test('at most maxConcurrent slots; waiters are served one caller after the other, not first come first served', async () => {
  const a = new Admission({ maxConcurrent: 1, maxQueue: 4, maxQueuePerCaller: 2 });
  const order: string[] = [];
  // Each waiter runs briefly once it has its slot, then gives it back.
  const take = (caller: string, tag: string): Promise<void> =>
    a.acquire(caller).then((s) => {
      order.push(tag);
      setImmediate(() => s.release());
    });
  const first: Slot = await a.acquire('A');
  order.push('A1');
  const waiting = [take('A', 'A2'), take('A', 'A3'), take('B', 'B1'), take('C', 'C1')];
  assert.equal(a.running, 1);
  assert.equal(a.waitingCount, 4);
  await assert.rejects(a.acquire('A'), overloaded, "beyond A's share of the queue");
  await assert.rejects(a.acquire('D'), overloaded, 'beyond the queue');
  first.release();
  first.release(); // idempotent
  await Promise.all(waiting);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['A1', 'A2', 'B1', 'C1', 'A3']);
  assert.equal(a.running, 0);
  assert.equal(a.waitingCount, 0);
});

test('a waiter gives up after queueTimeoutMs with 429, and one whose client left is removed at once', async () => {
  const a = new Admission({ maxConcurrent: 1, maxQueue: 4, queueTimeoutMs: 50 });
  const held = await a.acquire('A');
  const t0 = Date.now();
  await assert.rejects(a.acquire('B'), overloaded);
  assert.ok(Date.now() - t0 >= 45);
  const ctl = new AbortController();
  const gone = a.acquire('C', ctl.signal);
  ctl.abort(new Error('client closed'));
  await assert.rejects(gone, /client closed/);
  assert.equal(a.waitingCount, 0);
  held.release();
  const next = await a.acquire('D');
  assert.equal(a.running, 1, 'the freed slot went to a live caller');
  next.release();
});

test('a free slot is taken at once only when nobody is waiting (no overtaking)', async () => {
  const a = new Admission({ maxConcurrent: 2, maxQueue: 8, maxConcurrentPerCaller: 2 });
  const s1 = await a.acquire('A');
  const s2 = await a.acquire('A');
  const queued = a.acquire('B');
  s1.release();
  const s3 = await queued;
  assert.equal(a.running, 2);
  s2.release();
  s3.release();
  assert.throws(() => new Admission({ maxConcurrent: 0 }), RangeError);
});

test('one caller runs at most its share of the slots; the others get the free ones at once', async () => {
  const a = new Admission({ maxConcurrent: 4, maxQueue: 8, maxConcurrentPerCaller: 2 });
  const a1 = await a.acquire('A');
  const a2 = await a.acquire('A');
  let a3Granted = false;
  const a3 = a.acquire('A').then((s) => {
    a3Granted = true;
    return s;
  });
  const b1 = await a.acquire('B');
  const b2 = await a.acquire('B');
  assert.equal(a.running, 4);
  assert.equal(a3Granted, false, 'A waits although it asked first: it holds its share');
  b1.release();
  await new Promise((r) => setImmediate(r));
  assert.equal(a3Granted, false, "a slot freed by B does not go past A's share");
  const b3 = await a.acquire('B');
  a1.release();
  (await a3).release();
  for (const s of [a2, b2, b3]) s.release();
  assert.equal(a.running, 0);
});
