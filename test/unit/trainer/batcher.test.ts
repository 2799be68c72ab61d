import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SampleBatcher } from '../../../trainer/batcher.ts';
import { exampleSample } from '../../support/fixtures.ts';

const s = (id: string, userId: string | null, policyVersion = 0) => exampleSample({ sampleId: id, userId, policyVersion });
/** What the next batch at version 0 holds: the values added with its samples. */
const takeMetas = (b: SampleBatcher<number>) => b.take(0).batch.map((p) => p.meta);

test('samples more than maxStaleness versions old are dropped and counted, the rest train', () => {
  const b = new SampleBatcher<number>({ batchSize: 4, maxStaleness: 2, maxUserShare: 1 });
  [0, 1, 2, 3, 4, 5].forEach((v, i) => b.add(s(`s${i}`, null, v), i, 0));
  // At version 5: versions 0, 1, 2 are 5, 4, 3 behind (> 2): dropped; 3, 4, 5 train.
  assert.equal(b.ready(5, 0), false, 'only three fresh samples: not a full batch yet');
  const { batch, dropped } = b.take(5);
  assert.deepEqual(
    dropped.map((p) => p.sample.policyVersion),
    [0, 1, 2],
  );
  assert.deepEqual(
    batch.map((p) => p.sample.policyVersion),
    [3, 4, 5],
  );
  assert.equal(b.size, 0);
});

test("one user's share of a batch is capped; the rest waits for the next batch, in order", () => {
  const b = new SampleBatcher<number>({ batchSize: 4, maxUserShare: 0.5 });
  ['a', 'a', 'a', 'a', 'b', 'a', 'c'].forEach((u, i) => b.add(s(`s${i}`, u), i, 0));
  assert.equal(b.ready(0, 0), true);
  const first = b.take(0);
  assert.deepEqual(
    first.batch.map((p) => p.meta),
    [0, 1, 4, 6],
    'alice is capped at 2 of 4',
  );
  assert.deepEqual(
    b.pending().map((p) => p.meta),
    [2, 3, 5],
  );
  // Alice alone cannot fill a batch: nothing until the wait bound, then a capped partial batch.
  assert.equal(b.ready(0, 1000), false);
  assert.equal(b.ready(0, 30_000), true);
  assert.deepEqual(takeMetas(b), [2, 3]);
  assert.deepEqual(
    b.pending().map((p) => p.meta),
    [5],
  );
});

test('samples without a user id are not capped', () => {
  const b = new SampleBatcher<number>({ batchSize: 4, maxUserShare: 0.25 });
  for (let i = 0; i < 4; i++) b.add(s(`s${i}`, null), i, 0);
  assert.equal(b.take(0).batch.length, 4);
});

test("'tis' keeps stale samples and marks them for importance weighting", () => {
  const b = new SampleBatcher<number>({ batchSize: 2, maxStaleness: 1, staleness: 'tis' });
  b.add(s('old', 'a', 0), 0, 0);
  b.add(s('new', 'b', 5), 1, 0);
  const { batch, dropped } = b.take(5);
  assert.equal(dropped.length, 0);
  assert.deepEqual(
    batch.map((p) => p.stale),
    [true, false],
  );
});

test('invalid options are refused', () => {
  assert.throws(() => new SampleBatcher({ maxUserShare: 0 }), RangeError);
  assert.throws(() => new SampleBatcher({ batchSize: 0 }), RangeError);
});

test('a few stray samples never make a batch, however long they wait; masked-only batches still commit', () => {
  const b = new SampleBatcher<number>({ batchSize: 8, minSamples: 4, maxUserShare: 1, maxWaitMs: 10 });
  [0, 1, 2].forEach((i) => b.add(s(`s${i}`, null), i, 0));
  assert.equal(b.ready(0, 1_000_000), false, 'three trainable samples < minSamples 4, even after a long wait');
  b.add(s('s3', null), 3, 0);
  assert.equal(b.ready(0, 5), false, 'four samples, a partial batch: waits for maxWaitMs');
  assert.equal(b.ready(0, 20), true);
  const masked = new SampleBatcher<number>({ batchSize: 8, minSamples: 4, maxWaitMs: 10 });
  masked.add(exampleSample({ sampleId: 'm', lossMask: [0, 0, 0] }), 0, 0);
  assert.equal(masked.ready(0, 20), true, 'nothing to train: released so its offset commits');
  assert.throws(() => new SampleBatcher({ batchSize: 4, minSamples: 5 }), /minSamples/);
});

test('masked samples take no batch slot: they never keep trainable ones from forming a batch', () => {
  const b = new SampleBatcher<number>({ batchSize: 4, minSamples: 4, maxUserShare: 1 });
  for (let i = 0; i < 8; i++) b.add(exampleSample({ sampleId: `s${i}`, userId: null, lossMask: i % 2 === 0 ? [0, 0] : [1, 1] }), i, 0);
  assert.equal(b.ready(0, 0), true, 'four trainable samples among eight');
  const { batch } = b.take(0);
  assert.equal(batch.length, 8, 'the masked ones ride along and commit');
  assert.equal(batch.filter((p) => p.sample.lossMask.some((m) => m > 0)).length, 4);
});

const grouped = (id: string, batchId: string, batchSamples: number, userId = 'gym') =>
  exampleSample({
    sampleId: id,
    userId,
    group: { batchId, batchSamples, groupId: `${batchId}-g`, taskId: 't', rolloutIndex: 0, outcome: 1, advantage: 0.5 },
  });

test('a GRPO rollout batch is one step: all of its samples, nothing else, once all are in', () => {
  const b = new SampleBatcher<number>({ batchSize: 2, maxUserShare: 0.5, maxWaitMs: 1000 });
  b.add(grouped('g1', 'b1', 3), 0, 0);
  b.add(s('plain', 'alice'), 1, 0);
  b.add(grouped('g2', 'b1', 3), 2, 0);
  assert.equal(b.ready(0, 10), false, 'two of its three samples: it waits, and the plain sample waits behind it');
  b.add(grouped('g3', 'b1', 3), 3, 0);
  assert.equal(b.ready(0, 10), true);
  const { batch } = b.take(0);
  assert.deepEqual(
    batch.map((p) => p.meta),
    [0, 2, 3],
    'all three, over the batch size and the user cap, and not the plain sample',
  );
  assert.equal(b.ready(0, 10), false, 'the plain sample alone waits for the wait bound');
  assert.deepEqual(takeMetas(b), [1]);
});

test('a GRPO batch missing samples is let go after maxWaitMs; an ordinary batch never takes grouped samples', () => {
  const b = new SampleBatcher<number>({ batchSize: 2, maxWaitMs: 1000 });
  b.add(s('p1', null), 0, 0);
  b.add(s('p2', null), 1, 0);
  b.add(grouped('g1', 'b2', 2), 2, 0);
  assert.deepEqual(takeMetas(b), [0, 1]);
  assert.equal(b.ready(0, 500), false, 'one of two');
  assert.equal(b.ready(0, 1000), true, 'waited maxWaitMs');
  assert.deepEqual(takeMetas(b), [2]);
});

test('a GRPO batch larger than the buffer: the batcher says how many samples its head batch still waits for', () => {
  // The learner pauses its consumer on a full buffer only when this is 0 (a gym batch of 12
  // samples waited 600 s behind a buffer of 4 × batchSize = 4 before).
  const b = new SampleBatcher<number>({ batchSize: 1, maxWaitMs: 600_000 });
  assert.equal(b.missingOfHeadGroup(), 0, 'empty');
  for (let i = 0; i < 5; i++) b.add(grouped(`g${i}`, 'b5', 12), i, 0);
  assert.equal(b.missingOfHeadGroup(), 7);
  assert.equal(b.ready(0, 10), false);
  for (let i = 5; i < 12; i++) b.add(grouped(`g${i}`, 'b5', 12), i, 0);
  assert.equal(b.missingOfHeadGroup(), 0, 'whole');
  assert.equal(b.ready(0, 10), true);
  assert.equal(b.take(0).batch.length, 12);
  b.add(s('plain', 'alice'), 12, 0);
  assert.equal(b.missingOfHeadGroup(), 0, 'an ordinary sample at the head');
});
