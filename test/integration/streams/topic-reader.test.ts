/**
 * readToEnd: every record of the asked partitions up to the end it saw at the start, none of
 * the others (which it does not fetch).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';
import type { Kafka } from 'kafkajs';
import { createEventCodecs, createKafka, ensureTopics, EventProducer, readToEnd, type EventCodecs } from '../../../streams/index.ts';
import { exampleTurn } from '../../support/fixtures.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';

let kafka: Kafka;
let codecs: EventCodecs;
const perPartition = new Map<number, string[]>();

before(async () => {
  const stack = await ensureStack();
  kafka = createKafka({ brokers: stack.brokers.split(','), clientId: 'topic-reader-test' });
  const prefix = uniquePrefix('topic-reader');
  await ensureTopics(kafka, { naming: { prefix }, partitions: 4, ids: ['turns'] });
  codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
  const producer = new EventProducer(kafka, codecs);
  await producer.connect();
  const events = [];
  for (let i = 0; i < 200; i++) {
    const turnId = randomUUID();
    events.push({ id: 'turns' as const, key: `s${i % 17}`, value: exampleTurn({ turnId, sessionId: `s${i % 17}` }) });
  }
  for (let i = 0; i < events.length; i += 50) await producer.sendAll(events.slice(i, i + 50));
  await producer.disconnect();
  await readToEnd(kafka, codecs.topic('turns'), (r) => {
    const ids = perPartition.get(r.partition) ?? [];
    ids.push(r.key!.toString());
    perPartition.set(r.partition, ids);
  });
});

test('the whole topic: every record once', () => {
  const total = [...perPartition.values()].reduce((n, ids) => n + ids.length, 0);
  assert.equal(total, 200);
  assert.ok(perPartition.size >= 2, 'the keys spread over several partitions');
});

test('a subset of partitions: exactly their records, in partition order', async () => {
  const wanted = new Set([...perPartition.keys()].slice(0, 2));
  const seen = new Map<number, string[]>();
  const n = await readToEnd(
    kafka,
    codecs.topic('turns'),
    (r) => {
      const ids = seen.get(r.partition) ?? [];
      ids.push(r.key!.toString());
      seen.set(r.partition, ids);
    },
    { partitions: wanted },
  );
  assert.deepEqual(new Set(seen.keys()), wanted);
  for (const p of wanted) assert.deepEqual(seen.get(p), perPartition.get(p));
  assert.equal(
    n,
    [...wanted].reduce((k, p) => k + perPartition.get(p)!.length, 0),
  );
});

test('a transactional topic ends at its commit markers, not after an idle wait', async () => {
  const topic = `${uniquePrefix('topic-reader-tx')}out`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] });
  await admin.disconnect();
  const producer = kafka.producer({ transactionalId: `${topic}-tx`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let t = 0; t < 3; t++) {
    const tx = await producer.transaction();
    await tx.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: `${t}-${i}` })) });
    await tx.commit();
  }
  await producer.disconnect();
  // Every partition ends with a marker that is never handed over; an idle wait of 10 min
  // would outlast the 60 s limit, so finishing at all shows the markers count as read.
  let n = 0;
  const read = await readToEnd(kafka, topic, () => void n++, { idleMs: 600_000, timeoutMs: 60_000 });
  assert.equal(read, 30);
  assert.equal(n, 30);
});

test('a slow record handler is not cut off by the idle fallback', async () => {
  const seen: string[] = [];
  const n = await readToEnd(
    kafka,
    codecs.topic('turns'),
    async (r) => {
      // Every 50th record takes far longer than the idle limit.
      if (seen.length % 50 === 0) await new Promise((res) => setTimeout(res, 400)); // deliberate: a slow handler
      seen.push(r.key!.toString());
    },
    { idleMs: 100 },
  );
  assert.equal(n, 200);
  assert.equal(seen.length, 200);
});
