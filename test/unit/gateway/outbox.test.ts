/** The fsync'd outbox: order, exactly-once across restarts, torn tails, retries of the same batch. */
import assert from 'node:assert/strict';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { Outbox, type OutboxRecord } from '../../../streams/outbox.ts';
import { waitFor } from '../../support/wait-for.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function dir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'ts-outbox-'));
  dirs.push(d);
  return d;
}

test('records are sent in append order and the cursor survives a restart (nothing resent)', async () => {
  const d = await dir();
  const sent: OutboxRecord[] = [];
  const ob = await Outbox.open({ dir: d, sender: async (rs) => void sent.push(...rs), maxBatchRecords: 3 });
  await Promise.all(Array.from({ length: 10 }, (_, i) => ob.append('turns', `k${i}`, { i })));
  assert.equal(await ob.flush(5000), true);
  assert.deepEqual(
    sent.map((r) => (r.value as { i: number }).i),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
  await ob.close();
  const again: OutboxRecord[] = [];
  const ob2 = await Outbox.open({ dir: d, sender: async (rs) => void again.push(...rs) });
  await ob2.append('turns', 'k10', { i: 10 });
  await ob2.flush();
  assert.deepEqual(
    again.map((r) => (r.value as { i: number }).i),
    [10],
  );
  assert.equal(again[0].seq, 11, 'sequence numbers continue');
  await ob2.close();
});

test('without a reachable sender records wait on disk; a failed batch is retried unchanged', async () => {
  const d = await dir();
  const batches: number[][] = [];
  let fail = 2;
  const ob = await Outbox.open({
    dir: d,
    retryDelayMs: 10,
    maxBatchRecords: 100,
    sender: async (rs) => {
      batches.push(rs.map((r) => r.seq));
      if (fail-- > 0) throw new Error('kafka down');
    },
  });
  await ob.append('turns', 'a', 1);
  await ob.append('turns', 'a', 2);
  assert.equal(await ob.flush(3000), true);
  // The first batch (whatever it held) is resent identically after each failure.
  assert.deepEqual(batches[0], batches[1]);
  assert.deepEqual(batches[1], batches[2]);
  assert.equal(ob.stats().failures, 2);
  await ob.close();

  const d2 = await dir();
  const held = await Outbox.open({ dir: d2 });
  for (let i = 0; i < 4; i++) await held.append('turns', 'k', i);
  assert.equal(held.depth, 4);
  await held.close(0);
  const got: unknown[] = [];
  const resumed = await Outbox.open({ dir: d2, sender: async (rs) => void got.push(...rs.map((r) => r.value)) });
  assert.equal(resumed.depth, 4, 'depth is restored from disk');
  await resumed.flush();
  assert.deepEqual(got, [0, 1, 2, 3]);
  await resumed.close();
});

test('a torn last line (crash mid-append) is cut; complete records are kept', async () => {
  const d = await dir();
  const ob = await Outbox.open({ dir: d });
  await ob.append('turns', 'k', 'complete');
  await ob.close(0);
  await appendFile(join(d, 'outbox.jsonl'), '{"seq":2,"topic":"tu');
  const got: unknown[] = [];
  const ob2 = await Outbox.open({ dir: d, sender: async (rs) => void got.push(...rs.map((r) => r.value)) });
  assert.equal(ob2.depth, 1);
  await ob2.flush();
  assert.deepEqual(got, ['complete']);
  await ob2.append('turns', 'k', 'next');
  await ob2.flush();
  assert.deepEqual(got, ['complete', 'next']);
  await ob2.close();
});

test('a fully drained file is compacted', async () => {
  const d = await dir();
  const ob = await Outbox.open({ dir: d, compactBytes: 100, sender: async () => {} });
  for (let i = 0; i < 5; i++) await ob.append('turns', 'k', 'x'.repeat(50));
  await ob.flush();
  await waitFor(
    'the drained file to be compacted and the cursor reset',
    async () =>
      (await readFile(join(d, 'outbox.jsonl'))).length === 0 && JSON.parse(await readFile(join(d, 'cursor.json'), 'utf8')).offset === 0,
  );
  assert.equal((await readFile(join(d, 'outbox.jsonl'))).length, 0);
  assert.deepEqual(JSON.parse(await readFile(join(d, 'cursor.json'), 'utf8')).offset, 0);
  await ob.close();
});

/** A sender that refuses (for good, before sending anything) every batch holding a "poison" record, as EventProducer does. */
function refusing(sent: OutboxRecord[], attempts: number[][]) {
  return async (rs: OutboxRecord[]): Promise<void> => {
    attempts.push(rs.map((r) => r.seq));
    if (rs.some((r) => r.value === 'poison'))
      throw new TurnstreamError(ErrorCodes.TOO_LARGE, 'too large for its topic', { retriable: false });
    sent.push(...rs);
  };
}

test('a record refused for good never blocks the ones behind it: isolated by halving, set aside locally and dead-lettered, the rest sent in order', async () => {
  const d = await dir();
  const sent: OutboxRecord[] = [];
  const attempts: number[][] = [];
  const dead: Array<{ seq: number; code: string; keptIn: string }> = [];
  const ob = await Outbox.open({
    dir: d,
    maxBatchRecords: 16,
    retryDelayMs: 5,
    deadLetter: async (r, err, keptIn) => void dead.push({ seq: r.seq, code: err.code, keptIn }),
  });
  for (let i = 0; i < 20; i++) await ob.append('turns', 'k', i === 6 ? 'poison' : i);
  ob.setSender(refusing(sent, attempts));
  assert.equal(await ob.flush(5000), true, 'everything drains');
  assert.deepEqual(
    sent.map((r) => r.value),
    [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
    'every other record, in order, once',
  );
  assert.deepEqual(dead, [{ seq: 7, code: 'TS_ERR_TOO_LARGE', keptIn: join(d, 'dead-letters.jsonl') }]);
  const kept = (await readFile(join(d, 'dead-letters.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    kept.map((k) => [k.seq, k.value, k.code]),
    [[7, 'poison', 'TS_ERR_TOO_LARGE']],
  );
  assert.ok(attempts.length <= 12, `isolated in a few halvings (${attempts.length} sends)`);
  assert.equal(ob.stats().deadLettered, 1);
  await ob.close();

  // A restart finds nothing left: the cursor moved past the refused record.
  const again: OutboxRecord[] = [];
  const ob2 = await Outbox.open({ dir: d, sender: async (rs) => void again.push(...rs) });
  assert.equal(ob2.depth, 0);
  await ob2.close();
});

test('an outbox left with a refused record at its head (an older gateway) drains past it on open', async () => {
  const d = await dir();
  const held = await Outbox.open({ dir: d });
  await held.append('turns', 'k', 'poison');
  await held.append('turns', 'k', 'after');
  await held.close(0);
  const sent: OutboxRecord[] = [];
  const ob = await Outbox.open({ dir: d, sender: refusing(sent, []) });
  assert.equal(await ob.flush(5000), true);
  assert.deepEqual(
    sent.map((r) => r.value),
    ['after'],
  );
  await ob.close();
});

test('a dead-letter that cannot be published yet is retried, the refused record is not sent again, and nothing behind it overtakes it', async () => {
  const d = await dir();
  const sent: OutboxRecord[] = [];
  const attempts: number[][] = [];
  let dlqUp = false;
  let dlqCalls = 0;
  const ob = await Outbox.open({
    dir: d,
    retryDelayMs: 5,
    maxRetryDelayMs: 20,
    sender: refusing(sent, attempts),
    deadLetter: async () => {
      dlqCalls++;
      if (!dlqUp) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'kafka away');
    },
  });
  await ob.append('turns', 'k', 'poison');
  await ob.append('turns', 'k', 'after');
  await waitFor('the dead-letter to be retried', () => dlqCalls >= 2);
  assert.equal(sent.length, 0, 'nothing overtakes the record being set aside');
  assert.ok(dlqCalls >= 2, 'the dead-letter is retried');
  const poisonSends = attempts.filter((a) => a.includes(1)).length;
  dlqUp = true;
  assert.equal(await ob.flush(5000), true);
  assert.deepEqual(
    sent.map((r) => r.value),
    ['after'],
  );
  assert.equal(attempts.filter((a) => a.includes(1)).length, poisonSends, 'the refused record was not sent again');
  assert.equal((await readFile(join(d, 'dead-letters.jsonl'), 'utf8')).trim().split('\n').length, 1, 'kept once');
  await ob.close();
});

test('stalledMs: how long records have waited without any draining; 0 when empty', async () => {
  const d = await dir();
  const ob = await Outbox.open({ dir: d, retryDelayMs: 5, maxRetryDelayMs: 10 });
  assert.equal(ob.stats().stalledMs, 0);
  await ob.append('turns', 'k', 1);
  await waitFor('the record to wait 50 ms', () => ob.stats().stalledMs >= 50);
  assert.ok(ob.stats().stalledMs >= 50, 'no sender: stalled');
  ob.setSender(async () => {});
  assert.equal(await ob.flush(2000), true);
  assert.equal(ob.stats().stalledMs, 0);
  await ob.close();
});
