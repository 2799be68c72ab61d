/**
 * PublishConsumer ("publish, then commit") on real Kafka: an output and the offsets of the records
 * it used commit in one transaction; records used out of order ride as commit metadata, so a
 * restarted consumer gets exactly the records not used yet, and none twice.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Admin, Kafka } from 'kafkajs';
import { PublishConsumer, readToEnd } from '../../../streams/index.ts';
import { createLogger } from '../../../core/index.ts';
import { connectAdmin } from '../../support/kafka-admin.ts';
import { uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';

let kafka: Kafka;
let admin: Admin;

before(async () => ({ kafka, admin } = await connectAdmin('publish-consumer-test')));
after(() => admin.disconnect());

/** Topics `<name>-in…` and `<name>-out…` (one partition each) under fresh names; ten records r0…r9 (key k) in the first. */
async function tenRecords(name: string): Promise<{ input: string; output: string }> {
  const input = uniquePrefix(`${name}-in`);
  const output = uniquePrefix(`${name}-out`);
  await admin.createTopics({
    topics: [input, output].map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })),
    waitForLeaders: true,
  });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: input, messages: Array.from({ length: 10 }, (_, i) => ({ key: 'k', value: `r${i}` })) });
  await producer.disconnect();
  return { input, output };
}

test('records used out of order: the commit stops at the oldest one still pending, and a restart gets exactly the unused ones', async () => {
  const { input, output } = await tenRecords('publish');

  const groupId = `${input}-group`;
  const start = (seen: Array<{ offset: bigint; value: string }>) => {
    const pending = new Map<bigint, string>();
    const c = new PublishConsumer({
      kafka,
      groupId,
      topic: input,
      logger: createLogger('publish-consumer-test', 'silent'),
      handle: (_p, m, offset) => {
        seen.push({ offset, value: m.value!.toString() });
        pending.set(offset, m.value!.toString());
      },
      pending: () => [...pending.keys()].map((offset) => ({ partition: 0, offset })),
    });
    return { c, pending };
  };

  const firstSeen: Array<{ offset: bigint; value: string }> = [];
  const first = start(firstSeen);
  await first.c.start();
  await waitFor('ten records', () => firstSeen.length === 10, { timeoutMs: 60_000 });
  // Use every record but r2 and r5 (the learner's user cap keeps such samples buffered).
  const used = firstSeen.filter((r) => r.value !== 'r2' && r.value !== 'r5');
  for (const r of used) {
    first.c.done(0, r.offset);
    first.pending.delete(r.offset);
  }
  await first.c.commit([{ topic: output, key: 'v1', value: Buffer.from(used.map((r) => r.value).join(',')) }]);
  await first.c.stop();

  const [committed] = await admin.fetchOffsets({ groupId, topics: [input] });
  assert.equal(committed.partitions[0].offset, '2', 'the commit stops at r2, the oldest pending');
  assert.deepEqual(JSON.parse(committed.partitions[0].metadata ?? '{}'), { done: ['3', '4', '6', '7', '8', '9'] });

  const secondSeen: Array<{ offset: bigint; value: string }> = [];
  const second = start(secondSeen);
  await second.c.start();
  await waitFor('the two unused records', () => secondSeen.length >= 2, { timeoutMs: 60_000 });
  // One more record: once it arrives, the restarted consumer has been given all it was going to.
  const more = kafka.producer();
  await more.connect();
  await more.send({ topic: input, messages: [{ key: 'k', value: 'r10' }] });
  await more.disconnect();
  await waitFor('r10', () => secondSeen.some((r) => r.value === 'r10'), { timeoutMs: 60_000 });
  await second.c.stop();
  assert.deepEqual(
    secondSeen.map((r) => r.value),
    ['r2', 'r5', 'r10'],
  );

  const outputs: string[] = [];
  await readToEnd(kafka, output, (r) => void outputs.push(r.value!.toString()));
  assert.deepEqual(outputs, ['r0,r1,r3,r4,r6,r7,r8,r9'], 'the output committed once, with its offsets');
});

test('a second member of the group, under another instance id, fences the first: what the first then commits is refused, each record is used once', async () => {
  const { input, output } = await tenRecords('publish-fence');
  const groupId = `${input}-group`;
  const member = (instanceId: string) => {
    const seen: Array<{ offset: bigint; value: string }> = [];
    const c = new PublishConsumer({
      kafka,
      groupId,
      instanceId,
      topic: input,
      logger: createLogger('publish-consumer-test', 'silent'),
      handle: (_p, m, offset) => void seen.push({ offset, value: m.value!.toString() }),
      pending: () => [],
    });
    const useAll = async () => {
      for (const r of seen) c.done(0, r.offset);
      await c.commit([{ topic: output, key: instanceId, value: Buffer.from(seen.map((r) => r.value).join(',')) }]);
    };
    return { c, seen, useAll };
  };
  const a = member('a');
  await a.c.start();
  await waitFor('a to have the ten records', () => a.seen.length === 10, { timeoutMs: 60_000 });
  // b starts (a learner restarted elsewhere while a is stalled, say) before a commits what it used.
  const b = member('b');
  await b.c.start();
  await assert.rejects(a.useAll(), /fenced/);
  await a.c.stop();
  await waitFor('b to have the ten records', () => b.seen.length === 10, { timeoutMs: 60_000 });
  await b.useAll();
  await b.c.stop();
  const outputs: string[] = [];
  await readToEnd(kafka, output, (r) => void outputs.push(`${r.key!.toString()}:${r.value!.toString()}`));
  assert.deepEqual(outputs, ['b:r0,r1,r2,r3,r4,r5,r6,r7,r8,r9'], "only b's output, each record once");
});
