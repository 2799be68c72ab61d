/** The fsync'd outbox: order, exactly-once across restarts, torn tails, retries of the same batch. */
import assert from 'node:assert/strict';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Outbox, type OutboxRecord } from '../../../streams/outbox.ts';

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
  await new Promise((r) => setTimeout(r, 50));
  assert.equal((await readFile(join(d, 'outbox.jsonl'))).length, 0);
  assert.deepEqual(JSON.parse(await readFile(join(d, 'cursor.json'), 'utf8')).offset, 0);
  await ob.close();
});
