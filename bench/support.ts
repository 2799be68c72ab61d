/**
 * What the benchmarks share: a topic family of their own on the stack (the local one, reused
 * when it runs, or the configured endpoints), option parsing, quantiles, and the plain-kafkajs
 * baselines turnstream is measured against on the same broker and the same records: produce,
 * consume, and consume → produce passthrough.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Consumer, ICustomPartitioner, Kafka, KafkaMessage, Producer } from 'kafkajs';
import type { BenchConfig } from './options.ts';
import { stackUpFor, type StackEndpoints } from '../infra/index.ts';
import { createRegistryClient, type RegistryOptions, type TopicId } from '../schemas/index.ts';
import {
  createTopicsRetrying,
  createEventCodecs,
  createKafka,
  ensureTopics,
  parseBrokers,
  partitioner,
  type ConnectionSecurity,
  type EventCodecs,
  type KafkaClientOptions,
} from '../streams/index.ts';
import { createLogger } from '../core/index.ts';

export interface BenchFamily {
  endpoints: StackEndpoints;
  /** The stack's home folder (the services' pid files, for bench/cpu.ts). */
  home: string;
  /** `[TURNSTREAM_TOPIC_PREFIX]bench-<name>-<random>.`: the run's topics, groups and schema subjects. */
  prefix: string;
  kafka: Kafka;
  /** TLS and logins of Kafka and the registry, for the clients a bench makes itself. */
  security: ConnectionSecurity;
  /** What `kafka` was made with, for a second client (e.g. of stock kafkajs, bench/stock-kafkajs.ts). */
  clientOptions: KafkaClientOptions;
  codecs: EventCodecs;
  /** Deletes every topic, consumer group and schema subject of the run (call it in `finally`). */
  cleanup(): Promise<void>;
}

/** Deletes the topics, consumer groups and registry subjects whose names start with `prefix`. */
export async function deleteByPrefix(kafka: Kafka, registry: RegistryOptions, prefix: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await admin.deleteGroups(groups);
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 30_000 });
  } finally {
    await admin.disconnect();
  }
  const client = createRegistryClient(registry);
  for (const subject of (await client.getAllSubjects()).filter((x) => x.startsWith(prefix))) {
    await client.deleteSubject(subject, false).catch(() => undefined);
    await client.deleteSubject(subject, true).catch(() => undefined);
  }
}

/** The stack, a Kafka client and the codecs of a fresh topic family for one benchmark run. */
export async function benchFamily(config: BenchConfig, name: string, partitions: number, ids?: readonly TopicId[]): Promise<BenchFamily> {
  const endpoints = await stackUpFor(config);
  const prefix = `${config.topicPrefix}bench-${name}-${randomBytes(3).toString('hex')}.`;
  const clientOptions = {
    brokers: parseBrokers(endpoints.brokers),
    clientId: `bench-${name}`,
    logger: createLogger('kafka', 'error'),
    security: config.security.kafka,
  };
  const kafka = createKafka(clientOptions);
  const cleanup = () => deleteByPrefix(kafka, { url: endpoints.registryUrl, security: config.security.registry }, prefix);
  try {
    await ensureTopics(kafka, { naming: { prefix }, partitions, ids });
    const codecs = await createEventCodecs({
      registryUrl: endpoints.registryUrl,
      registrySecurity: config.security.registry,
      naming: { prefix },
    });
    return { endpoints, home: config.home, prefix, kafka, clientOptions, codecs, cleanup, security: config.security };
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
}

/** A temp folder for one run, and its removal. */
export async function benchTempDir(name: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `bench-${name}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Runs `fn` with a topic family and a temporary folder of its own, both removed after it. */
export async function withBenchFamily<T>(
  config: BenchConfig,
  name: string,
  partitions: number,
  ids: readonly TopicId[] | undefined,
  fn: (family: BenchFamily, dir: string) => Promise<T>,
): Promise<T> {
  const family = await benchFamily(config, name, partitions, ids);
  const temp = await benchTempDir(name);
  try {
    return await fn(family, temp.dir);
  } finally {
    await family.cleanup();
    await temp.remove();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A non-negative integer option, or the default. */
export const intOption = (v: string | undefined, d: number): number =>
  v !== undefined && Number.isFinite(Number(v)) && Number(v) >= 0 ? Math.floor(Number(v)) : d;

/** The median of `xs` (mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The q-quantile of ascending `sorted` (nearest rank). */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export async function createPlainTopic(kafka: Kafka, topic: string, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await createTopicsRetrying(admin, { topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }] });
  } finally {
    await admin.disconnect();
  }
}

/** Produces `records` to `topic` (idempotent, acks=all) in batches; returns the seconds it took. */
export async function rawProduce(
  kafka: Kafka,
  topic: string,
  records: Array<{ key: string; value: Buffer }>,
  batch = 500,
  createPartitioner: ICustomPartitioner = partitioner,
): Promise<number> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner });
  await producer.connect();
  try {
    const t0 = performance.now();
    for (let i = 0; i < records.length; i += batch) await producer.send({ topic, acks: -1, messages: records.slice(i, i + batch) });
    return (performance.now() - t0) / 1000;
  } finally {
    await producer.disconnect();
  }
}

export interface RawConsumeOptions {
  /** Called with each record (to decode it, say). @default none */
  each?: (topic: string, message: KafkaMessage) => void;
  /** Time from joining the group, as a service that must join first is timed, not from the first batch. @default false */
  fromJoin?: boolean;
  /** @default 20 */
  maxWaitTimeInMs?: number;
}

/** Reads `count` records of `topics` from the beginning with a fresh group; seconds from the first batch (or the join). */
export async function rawConsume(
  kafka: Kafka,
  topics: string | string[],
  count: number,
  groupId: string,
  o: RawConsumeOptions = {},
): Promise<number> {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: o.maxWaitTimeInMs ?? 20 });
  let seen = 0;
  let t0 = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  if (o.fromJoin) consumer.on(consumer.events.GROUP_JOIN, () => void (t0 = performance.now()));
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: typeof topics === 'string' ? [topics] : topics, fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        t0 ||= performance.now();
        if (o.each) for (const m of batch.messages) o.each(batch.topic, m);
        seen += batch.messages.length;
        if (seen >= count) done();
      },
    });
    await finished;
    return (performance.now() - t0) / 1000;
  } finally {
    await consumer.disconnect();
  }
}

/** Plain kafkajs: reads `count` records of `from` and produces them to `to` (acks=all); seconds from the first batch. */
export function rawPassthrough(
  kafka: Kafka,
  from: string,
  to: string,
  count: number,
  groupId: string,
  partitions: number,
  createPartitioner: ICustomPartitioner = partitioner,
): Promise<number> {
  return rawChain(kafka, from, [to], count, groupId, partitions, createPartitioner);
}

/**
 * Plain kafkajs passthroughs in a row, all running at once in this process: `from` → `hops[0]` →
 * `hops[1]` …, each a consumer (group `<groupId>-<i>`) and an idempotent producer (acks=all), as a
 * pipeline of stages that do nothing would run. Seconds from the first hop's first batch (every
 * hop has joined by then) until the last hop has forwarded `count` records.
 */
export async function rawChain(
  kafka: Kafka,
  from: string,
  hops: string[],
  count: number,
  groupId: string,
  partitions: number,
  createPartitioner: ICustomPartitioner = partitioner,
): Promise<number> {
  for (const to of hops) await createPlainTopic(kafka, to, partitions);
  let t0 = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const stages: Array<{ consumer: Consumer; producer: Producer }> = [];
  try {
    // The last hop first: every hop has joined before the first records reach it.
    for (const [i, to] of [...hops.entries()].reverse()) {
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner });
      const consumer = kafka.consumer({ groupId: `${groupId}-${i}`, maxWaitTimeInMs: 20 });
      stages.push({ consumer, producer });
      await producer.connect();
      await consumer.connect();
      await consumer.subscribe({ topic: i === 0 ? from : hops[i - 1], fromBeginning: true });
      let forwarded = 0;
      const last = i === hops.length - 1;
      await consumer.run({
        eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
          t0 ||= performance.now();
          await producer.send({ topic: to, acks: -1, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) });
          for (const m of batch.messages) resolveOffset(m.offset);
          await heartbeat();
          forwarded += batch.messages.length;
          if (last && forwarded >= count) done();
        },
      });
    }
    await finished;
    return (performance.now() - t0) / 1000;
  } finally {
    for (const { consumer, producer } of stages) {
      await consumer.disconnect();
      await producer.disconnect();
    }
  }
}
