/**
 * The native stack, for real: a throw-away stack in a temp home on free ports (so it
 * never collides with the developer's stack on the default ports), sharing the
 * downloaded Kafka jars and Apicurio app of `<repo>/.turnstream`. Stopped at the end, by pid.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from '../../../streams/kafkajs.ts';
import { AvroDeserializer, AvroSerializer, SchemaRegistryClient, SerdeType } from '@confluentinc/schemaregistry';
import { createClient } from '@clickhouse/client';
import {
  getFreePort,
  isPortFree,
  stackDown,
  stackPids,
  stackStatus,
  stackUp,
  type StackOptions,
  type StackUpResult,
} from '../../../infra/index.ts';
import { isAlive } from '../../../infra/process.ts';
import { REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';

const home = mkdtempSync(join(tmpdir(), 'turnstream-stack-'));
const prefix = uniquePrefix('infra-stack');
let options: StackOptions;
let first: StackUpResult;

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await getFreePort());
  return [...ports];
}

before(async () => {
  const [kafkaPort, kafkaControllerPort, registryPort, clickhousePort, clickhouseTcpPort] = await distinctFreePorts(5);
  options = {
    home,
    distDir: join(REPO_ROOT, '.turnstream'),
    kafkaPort,
    kafkaControllerPort,
    registryPort,
    clickhousePort,
    clickhouseTcpPort,
    onProgress: (p) => process.stderr.write(`# ${p.service}: ${p.message}\n`),
  };
  first = await stackUp(options);
});

after(async () => {
  if (options) await stackDown(options);
  rmSync(home, { recursive: true, force: true });
});

test('a cold up starts all three services and status sees them up', async () => {
  for (const s of ['kafka', 'registry', 'clickhouse'] as const) {
    assert.equal(first.services[s].state, 'started', s);
    assert.ok(first.services[s].pid && isAlive(first.services[s].pid), `${s} pid alive`);
  }
  const status = await stackStatus(options);
  assert.deepEqual(status, {
    kafka: { up: true, brokers: `127.0.0.1:${options.kafkaPort}` },
    registry: { up: true, url: `http://127.0.0.1:${options.registryPort}/apis/ccompat/v7` },
    clickhouse: { up: true, url: `http://127.0.0.1:${options.clickhousePort}`, version: status.clickhouse.version },
  });
  assert.match(status.clickhouse.version ?? '', /^\d+\.\d+\.\d+/);
  // Logs and pids land in the home.
  assert.ok(existsSync(join(home, 'logs', 'kafka', 'server.log')));
  assert.deepEqual(
    readdirSync(join(home, 'pids'))
      .filter((f) => f.endsWith('.pid'))
      .sort(),
    ['clickhouse.pid', 'kafka.pid', 'registry.pid'],
  );
});

test('Kafka: a created topic carries a produced message to a consumer group', async () => {
  const kafka = new Kafka({ clientId: 'infra-test', brokers: [first.brokers], logLevel: logLevel.NOTHING });
  const topic = `${prefix}ping`;
  const admin = kafka.admin();
  await admin.connect();
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true }), true);
  await admin.disconnect();

  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: [{ key: 'k1', value: 'hello kraft' }] });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `${prefix}group` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const received = await new Promise<{ key: string; value: string }>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30_000);
    void consumer.run({
      eachMessage: async ({ message }) => {
        clearTimeout(timer);
        resolvePromise({ key: String(message.key), value: String(message.value) });
      },
    });
  });
  await consumer.disconnect();
  assert.deepEqual(received, { key: 'k1', value: 'hello kraft' });
});

const pingSchema = {
  type: 'record',
  name: 'Ping',
  namespace: 'dev.turnstream.test',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'n', type: 'int' },
  ],
};
const subject = `${prefix}ping-value`;

test('registry: @confluentinc/schemaregistry registers an Avro schema at the ccompat URL and reads it back', async () => {
  const client = new SchemaRegistryClient({ baseURLs: [first.registryUrl] });
  const id = await client.register(subject, { schemaType: 'AVRO', schema: JSON.stringify(pingSchema) });
  assert.ok(Number.isInteger(id) && id > 0);
  const back = await client.getBySubjectAndId(subject, id);
  assert.deepEqual(JSON.parse(back.schema), pingSchema);
  const latest = await client.getLatestSchemaMetadata(subject);
  assert.equal(latest.id, id);
  assert.equal(latest.version, 1);

  const bytes = await new AvroSerializer(client, SerdeType.VALUE, { useLatestVersion: true }).serialize(`${prefix}ping`, { id: 'a', n: 3 });
  assert.equal(bytes[0], 0, 'Confluent wire format magic byte');
  assert.equal(bytes.readInt32BE(1), id);
  const decoded = await new AvroDeserializer(client, SerdeType.VALUE, {}).deserialize(`${prefix}ping`, bytes);
  assert.deepEqual({ ...decoded }, { id: 'a', n: 3 });
});

test('ClickHouse: SELECT 1 through @clickhouse/client', async () => {
  const client = createClient({ url: first.clickhouseUrl });
  try {
    const rows = await (await client.query({ query: 'SELECT 1 AS one', format: 'JSONEachRow' })).json<{ one: number }>();
    assert.deepEqual(rows, [{ one: 1 }]);
  } finally {
    await client.close();
  }
});

test('a second up reuses the running services: same pids, in seconds', async () => {
  const t = Date.now();
  const again = await stackUp({ ...options, onProgress: undefined });
  assert.ok(Date.now() - t < 5_000, `second up took ${Date.now() - t} ms`);
  for (const s of ['kafka', 'registry', 'clickhouse'] as const) {
    assert.equal(again.services[s].state, 'reused', s);
    assert.equal(again.services[s].pid, first.services[s].pid, s);
  }
});

test('given endpoints are only health-checked: nothing starts in another home', async () => {
  const otherHome = mkdtempSync(join(tmpdir(), 'turnstream-external-'));
  try {
    const external = await stackUp({
      home: otherHome,
      kafkaBrokers: first.brokers,
      schemaRegistryUrl: first.registryUrl,
      clickhouseUrl: first.clickhouseUrl,
    });
    for (const s of ['kafka', 'registry', 'clickhouse'] as const) assert.equal(external.services[s].state, 'external', s);
    assert.deepEqual(stackPids({ home: otherHome }), { kafka: undefined, registry: undefined, clickhouse: undefined });
    await assert.rejects(
      stackUp({ home: otherHome, kafkaBrokers: first.brokers, schemaRegistryUrl: first.registryUrl, clickhouseUrl: 'http://127.0.0.1:1' }),
      /ClickHouse at http:\/\/127\.0\.0\.1:1 does not answer\. CLICKHOUSE_URL is set, so it is not started here; unset CLICKHOUSE_URL to start the local one/,
    );
  } finally {
    rmSync(otherHome, { recursive: true, force: true });
  }
});

test('down stops every process by pid; the next up brings back Kafka data and kafkasql schemas', async () => {
  const pids = first.services;
  const stopped = await stackDown(options);
  assert.deepEqual(stopped, { kafka: pids.kafka.pid, registry: pids.registry.pid, clickhouse: pids.clickhouse.pid });
  for (const s of ['kafka', 'registry', 'clickhouse'] as const) assert.equal(isAlive(pids[s].pid!), false, `${s} stopped`);
  for (const port of [options.kafkaPort!, options.registryPort!, options.clickhousePort!])
    assert.equal(await isPortFree('127.0.0.1', port), true);
  assert.deepEqual(await stackStatus(options), {
    kafka: { up: false, brokers: first.brokers },
    registry: { up: false, url: first.registryUrl },
    clickhouse: { up: false, url: first.clickhouseUrl },
  });

  const restarted = await stackUp({ ...options, onProgress: undefined });
  assert.equal(restarted.services.kafka.state, 'started');
  process.stderr.write(`# warm restart (formatted storage, installed jars): ${restarted.ms} ms\n`);
  const client = new SchemaRegistryClient({ baseURLs: [restarted.registryUrl] });
  const latest = await client.getLatestSchemaMetadata(subject);
  assert.deepEqual(JSON.parse(latest.schema), pingSchema, 'schema replayed from the kafkasql journal');
  const admin = new Kafka({ brokers: [restarted.brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    assert.ok((await admin.listTopics()).includes(`${prefix}ping`), 'topic survived the restart');
  } finally {
    await admin.disconnect();
  }
});

test('with its own endpoints exported (as `infra up` prints them), up starts a killed local Kafka again', async () => {
  const before = stackPids(options);
  assert.ok(before.kafka, 'Kafka runs');
  process.kill(before.kafka!, 'SIGKILL');
  await waitFor('Kafka to die', () => !isAlive(before.kafka!), { timeoutMs: 10_000, intervalMs: 100 });
  const endpoints = await stackStatus(options);
  const again = await stackUp({
    ...options,
    onProgress: undefined,
    kafkaBrokers: endpoints.kafka.brokers,
    schemaRegistryUrl: endpoints.registry.url,
    clickhouseUrl: endpoints.clickhouse.url,
  });
  assert.equal(again.services.kafka.state, 'started', 'the local Kafka is started again, not taken for a foreign one');
  assert.equal(again.services.clickhouse.state, 'reused');
  assert.equal((await stackStatus(options)).kafka.up, true);
});
