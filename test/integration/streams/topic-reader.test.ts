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
