/**
 * A replicated local cluster (`infra up --brokers 3`), for real, in a throw-away home on free
 * ports: three KRaft nodes, each broker and controller. Topics made by turnstream keep three copies
 * with two in sync for a write; with one broker killed (-9), acks=all writes, transactions and
 * reads go on, and the next `up` starts it again. Stopped at the end, by pid.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Admin, Kafka } from 'kafkajs';
import { kafkaNodePids, stackDown, stackUp, type StackOptions, type StackUpResult } from '../../../infra/index.ts';
import { isAlive } from '../../../infra/process.ts';
import { topicName } from '../../../schemas/index.ts';
import { createKafka, ensureTopics, parseBrokers, partitioner } from '../../../streams/index.ts';
import kafkajs from '../../../streams/kafkajs.ts';
import { distinctFreePorts, freePortBlock } from '../../support/port-block.ts';
import { REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';

const home = mkdtempSync(join(tmpdir(), 'turnstream-brokers-'));
const prefix = uniquePrefix('three-brokers');
let options: StackOptions;
let up: StackUpResult;
let kafka: Kafka;

before(async () => {
  const kafkaPort = await freePortBlock(6);
  const block = Array.from({ length: 6 }, (_, i) => kafkaPort + i);
  const [registryPort, clickhousePort, clickhouseTcpPort] = await distinctFreePorts(3, block);
  options = {
    home,
    distDir: join(REPO_ROOT, '.turnstream'),
    brokerCount: 3,
    kafkaPort,
    kafkaControllerPort: kafkaPort + 1,
    registryPort,
    clickhousePort,
    clickhouseTcpPort,
    onProgress: (p) => process.stderr.write(`# ${p.service}: ${p.message}\n`),
  };
  up = await stackUp(options);
  process.stderr.write(`# three brokers (and the registry, ClickHouse) up in ${(up.ms / 1000).toFixed(1)} s\n`);
  kafka = createKafka({ brokers: parseBrokers(up.brokers), clientId: 'three-brokers' });
});

after(async () => {
  if (options) await stackDown(options);
  rmSync(home, { recursive: true, force: true });
});

async function withAdmin<T>(body: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await body(admin);
  } finally {
    await admin.disconnect();
  }
}

/** Replicas and in-sync replicas of each partition of `topic`. */
const partitionsOf = (topic: string) =>
  withAdmin(async (admin) => (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions);

test('three nodes, each broker and controller, come up as one cluster', async () => {
  assert.equal(up.services.kafka.state, 'started');
  assert.equal(up.services.kafka.pids.length, 3);
  assert.equal(up.brokers.split(',').length, 3);
  const cluster = await withAdmin((admin) => admin.describeCluster());
  assert.deepEqual(cluster.brokers.map((b) => b.nodeId).sort(), [1, 2, 3]);
});

test("turnstream's topics keep three copies with two in sync for a write; so do Kafka's own", async () => {
  const names = await ensureTopics(kafka, { naming: { prefix } });
  assert.ok(names.length > 5);
  for (const name of names) {
    for (const p of await partitionsOf(name)) assert.equal(p.replicas.length, 3, `${name}/${p.partitionId}`);
  }
  const configs = await withAdmin((admin) =>
    admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type: kafkajs.ConfigResourceTypes.TOPIC, name, configNames: ['min.insync.replicas'] })),
    }),
  );
  for (const r of configs.resources) assert.equal(r.configEntries[0]?.configValue, '2', r.resourceName);
  // A transaction and a group's commit make the internal topics; they are replicated alike.
  const topic = topicName('turns', { prefix });
  const producer = kafka.producer({ transactionalId: `${prefix}tx-probe`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const tx = await producer.transaction();
  await tx.send({ topic, acks: -1, messages: [{ key: 'probe', value: 'probe' }] });
  await tx.commit();
  await producer.disconnect();
  await withAdmin((admin) => admin.setOffsets({ groupId: `${prefix}probe`, topic, partitions: [{ partition: 0, offset: '0' }] }));
  for (const internal of ['__transaction_state', '__consumer_offsets']) {
    for (const p of await partitionsOf(internal)) assert.equal(p.replicas.length, 3, `${internal}/${p.partitionId}`);
  }
});

test('with a broker killed, acks=all writes, transactions and reads go on; the next up starts it again', { timeout: 240_000 }, async () => {
  const topic = topicName('samples', { prefix });
  await ensureTopics(kafka, { naming: { prefix }, ids: ['samples'] });
  // As turnstream's producers write: idempotent, acks=all, the partitioner co-partitioning relies on.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: partitioner });
  await producer.connect();
  const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${(from + i) % 17}`, value: `v${from + i}` }));
  try {
    await producer.send({ topic, acks: -1, messages: batch(0, 60) });

    // Kill the leader of partition 0, as a crash would (no controlled shutdown).
    const leader = (await partitionsOf(topic)).find((p) => p.partitionId === 0)!.leader;
    const victim = kafkaNodePids(options)[leader - 1]!;
    process.kill(victim, 'SIGKILL');
    await waitFor('the killed broker to be gone', () => !isAlive(victim), { timeoutMs: 10_000 });
    const t = Date.now();
    await producer.send({ topic, acks: -1, messages: batch(60, 60) });
    process.stderr.write(`# acks=all write with broker ${leader} killed: ${Date.now() - t} ms\n`);
    // The dead broker was fenced (the write above waited for its partitions' new leaders): it
    // leads none and is in no partition's in-sync set, once the metadata says so everywhere.
    await waitFor('every partition led and in sync on the two live brokers', async () =>
      (await partitionsOf(topic)).every((p) => p.leader !== leader && p.isr.length === 2 && !p.isr.includes(leader)),
    );
  } finally {
    await producer.disconnect();
  }
  const txProducer = kafka.producer({ transactionalId: `${prefix}tx-after-kill`, idempotent: true, maxInFlightRequests: 1 });
  await txProducer.connect();
  const tx = await txProducer.transaction();
  await tx.send({ topic, acks: -1, messages: batch(120, 10) });
  await tx.commit();
  await txProducer.disconnect();

  // A new group reads every committed record from the start: 130, none lost, none twice.
  const seen = new Map<string, number>();
  const consumer = kafka.consumer({ groupId: `${prefix}reader`, sessionTimeout: 10_000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const v = String(message.value);
      seen.set(v, (seen.get(v) ?? 0) + 1);
    },
  });
  try {
    await waitFor('all 130 records read', () => seen.size === 130, { timeoutMs: 90_000, intervalMs: 200 }).catch(async (err: Error) => {
      const missing = Array.from({ length: 130 }, (_, i) => `v${i}`).filter((v) => !seen.has(v));
      const where = (await partitionsOf(topic)).map((p) => `${p.partitionId}: leader ${p.leader}, in sync ${p.isr}`).join('; ');
      throw new Error(`${err.message}: ${seen.size} read, missing ${missing.join(' ')}; ${where}`);
    });
  } finally {
    await consumer.disconnect();
  }
  assert.deepEqual(
    [...seen.values()].filter((n) => n !== 1),
    [],
    'each record once',
  );

  const before = kafkaNodePids(options);
  assert.equal(before.filter((pid) => pid !== undefined).length, 2);
  const again = await stackUp({ ...options, onProgress: undefined });
  assert.equal(again.services.kafka.state, 'started');
  const after = kafkaNodePids(options);
  assert.ok(
    after.every((pid) => pid !== undefined && isAlive(pid)),
    'three nodes run',
  );
  assert.deepEqual(
    after.filter((_, i) => before[i] !== undefined),
    before.filter((pid) => pid !== undefined),
    'the two that ran were kept',
  );
  await waitFor(
    'every partition in sync on three brokers again',
    async () => (await partitionsOf(topic)).every((p) => p.isr.length === 3),
    {
      timeoutMs: 90_000,
      intervalMs: 1000,
    },
  );
});
