/**
 * FlushConsumer ("flush, then commit") on real Kafka: offsets are committed only for what a
 * flush stored; a flush that fails pauses fetching and is retried until it succeeds; a rejoin
 * follows a new topic from its start. The store is the test's own list.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Admin, Kafka, KafkaMessage } from 'kafkajs';
import { FlushConsumer, type FlushConsumerOptions } from '../../../streams/index.ts';
import { createLogger } from '../../../core/index.ts';
import { connectAdmin } from '../../support/kafka-admin.ts';
import { uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';

let kafka: Kafka;
let admin: Admin;

before(async () => ({ kafka, admin } = await connectAdmin('flush-consumer-test')));
after(() => admin.disconnect());

async function produce(topic: string, from: number, records: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  const messages = Array.from({ length: records }, (_, i) => ({ key: `k${i % 7}`, value: `${topic}:${from + i}` }));
  for (let i = 0; i < messages.length; i += 100) await producer.send({ topic, messages: messages.slice(i, i + 100) });
  await producer.disconnect();
}

async function topicWith(name: string, records: number): Promise<string> {
  const topic = uniquePrefix(name);
  await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true });
  await produce(topic, 0, records);
  return topic;
}

/** The group's committed offsets summed over the topic's partitions (−1, none yet, counts 0). */
async function committed(groupId: string, topic: string): Promise<number> {
  const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return t.partitions.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
}

/** A store of values that fails while `failing` is set; what it took stays buffered then. */
function listStore(flushMs = 5) {
  // handled counts what was fetched: the buffer itself is empty while a flush holds its records
  const s = { stored: [] as string[], buffer: [] as string[], failing: false, failures: 0, handled: 0 };
  return {
    s,
    handle: (_topic: string, _partition: number, m: KafkaMessage) => void (s.handled++, s.buffer.push(m.value!.toString())),
    buffered: () => s.buffer.length,
    flush: async () => {
      const taken = s.buffer;
      s.buffer = [];
      await new Promise((r) => setTimeout(r, flushMs)); // deliberate: a store that takes a while
      if (s.failing) {
        s.failures++;
        s.buffer = [...taken, ...s.buffer];
        throw new Error('store unavailable');
      }
      s.stored.push(...taken);
    },
  };
}

/** Options of a FlushConsumer (silent) of `groupId` on `topics` that stores into `store`; `over` sets the rest. */
function intoStore(
  store: ReturnType<typeof listStore>,
  groupId: string,
  topics: string[],
  over: Partial<FlushConsumerOptions> = {},
): FlushConsumerOptions {
  return {
    kafka,
    groupId,
    topics,
    logger: createLogger('flush-consumer-test', 'silent'),
    handle: store.handle,
    buffered: store.buffered,
    flush: store.flush,
    ...over,
  };
}

test('commits only what a flush stored; a failing flush pauses fetching and is retried until it succeeds', async () => {
  const topic = await topicWith('flush-consumer', 600);
  const groupId = `${topic}-group`;
  const store = listStore();
  store.s.failing = true;
  const consumer = new FlushConsumer(
    intoStore(store, groupId, [topic], { flushAt: 50, maxBuffered: 200, retryInitialMs: 50, retryMaxMs: 200 }),
  );
  await consumer.start();
  await waitFor('flushes failing and fetching paused', () => store.s.failures >= 3 && consumer.stats().paused, { timeoutMs: 60_000 });
  // Nothing committed, and nothing more fetched: 300 records produced now stay in Kafka.
  assert.equal(await committed(groupId, topic), 0);
  const handled = store.s.handled;
  await produce(topic, 600, 300);
  await new Promise((r) => setTimeout(r, 1500)); // absence window: nothing fetched while paused
  assert.equal(store.s.handled, handled, 'fetching stayed paused');
  store.s.failing = false;
  await waitFor('every record stored', () => store.s.stored.length >= 900, { timeoutMs: 60_000 });
  await waitFor('the end committed', async () => (await committed(groupId, topic)) === 900, { timeoutMs: 60_000 });
  assert.equal(consumer.stats().paused, false);
  await consumer.stop();
  assert.equal(store.s.stored.length, 900, 'nothing stored twice');
  assert.equal(new Set(store.s.stored).size, 900);
});

test('a full buffer with a slow but working store waits for flushes instead of pausing fetching', async () => {
  const topic = await topicWith('flush-consumer-full', 3000);
  const groupId = `${topic}-group`;
  const store = listStore(40);
  let peak = 0;
  const pauses: boolean[] = [];
  const consumer = new FlushConsumer({
    ...intoStore(store, groupId, [topic]),
    flushAt: 50,
    maxBuffered: 200,
    handle: (topic, partition, m) => {
      store.handle(topic, partition, m);
      peak = Math.max(peak, store.s.buffer.length);
      return undefined;
    },
    onPaused: (paused) => void pauses.push(paused),
  });
  await consumer.start();
  await waitFor('every record stored', () => store.s.stored.length >= 3000, { timeoutMs: 60_000 });
  await waitFor('the end committed', async () => (await committed(groupId, topic)) === 3000, { timeoutMs: 60_000 });
  await consumer.stop();
  assert.ok(peak >= 200, `the buffer filled up (peak ${peak})`);
  // One partition's fetched batch may land on a buffer just under the bound, no more (all 3,000 without the wait).
  const largest = Math.max(...(await admin.fetchTopicOffsets(topic)).map((p) => Number(p.high)));
  assert.ok(peak < 200 + largest, `the buffer stayed bounded (peak ${peak}, largest partition ${largest})`);
  assert.deepEqual(pauses, [], 'fetching was never paused');
  assert.equal(store.s.stored.length, 3000, 'nothing stored twice');
  assert.equal(new Set(store.s.stored).size, 3000);
});

test('stop stores what is buffered and commits it; a consumer of the same group reads on from there', async () => {
  const topic = await topicWith('flush-consumer-stop', 300);
  const groupId = `${topic}-group`;
  const store = listStore();
  // Never due by size or age: only stop flushes.
  const options = intoStore(store, groupId, [topic], { flushAt: 1_000_000, flushIntervalMs: 600_000 });
  const first = new FlushConsumer(options);
  await first.start();
  await waitFor('records fetched', () => store.s.buffer.length >= 300, { timeoutMs: 60_000 });
  assert.equal(store.s.stored.length, 0);
  await first.stop();
  assert.equal(store.s.stored.length, 300);
  assert.equal(await committed(groupId, topic), 300);
  const second = new FlushConsumer({ ...options, flushAt: 1 });
  await second.start();
  // One new record: once it is stored, the second consumer has read all it was going to.
  await produce(topic, 300, 1);
  await waitFor('the new record stored', () => store.s.stored.includes(`${topic}:300`), { timeoutMs: 60_000 });
  await second.stop();
  assert.equal(store.s.stored.length, 301, 'the second consumer read nothing again');
});

test('rejoin follows a new topic from its start, after storing and committing what it had', async () => {
  const live = await topicWith('flush-consumer-live', 100);
  const later = await topicWith('flush-consumer-later', 120);
  const groupId = `${live}-group`;
  const store = listStore();
  const consumer = new FlushConsumer(intoStore(store, groupId, [live], { flushAt: 10 }));
  await consumer.start();
  await waitFor('the live topic stored', () => store.s.stored.length >= 100, { timeoutMs: 60_000 });
  assert.equal(await consumer.rejoin([live], [later]), true);
  assert.deepEqual(consumer.stats().topics.sort(), [live, later].sort());
  await waitFor('the later topic stored', () => store.s.stored.length >= 220, { timeoutMs: 60_000 });
  await waitFor('both committed', async () => (await committed(groupId, live)) === 100 && (await committed(groupId, later)) === 120, {
    timeoutMs: 60_000,
  });
  await consumer.stop();
  assert.equal(store.s.stored.length, 220);
  assert.equal(consumer.stats().rejoins, 1);
});
