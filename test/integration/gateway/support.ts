/**
 * Helpers shared by the gateway's integration and e2e tests: a tiny model, a gateway wired to
 * the real stack under a unique topic prefix, and a read_committed reader of what reached a topic.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import type { TopicId, TopicNaming } from '../../../schemas/index.ts';
import { createEventCodecs, createKafka, ensureTopics, type EventCodecs, type TopicValues } from '../../../streams/index.ts';
import { createLogger } from '../../../core/index.ts';
import { createGateway, type Gateway, type GatewayOptions } from '../../../gateway/index.ts';
import { waitFor } from '../../support/wait-for.ts';

/** Small enough to generate fast on 2 CPU cores. */
export const TINY = { contextLength: 128, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 } as const;

export async function tempHome(name: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `ts-gw-${name}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export interface StartedGateway {
  gw: Gateway;
  url: string;
}

export async function startGateway(opts: Partial<GatewayOptions> & { home: string }): Promise<StartedGateway> {
  const gw = createGateway({
    port: 0,
    logger: createLogger('gateway-test', process.env.LOG_LEVEL ?? 'warn'),
    builtin: opts.upstream ? undefined : { weightsDir: join(opts.home, 'weights'), initConfig: TINY, defaultMaxTokens: 16 },
    ...opts,
  });
  const url = await gw.start();
  return { gw, url };
}

/**
 * Follows a topic from the beginning (read_committed) and collects decoded events, so a test
 * can wait for "exactly N" and then check that no extra event arrives.
 */
export class TopicCollector<K extends TopicId> {
  readonly events: Array<{ key: string | null; value: TopicValues[K] }> = [];
  private constructor(private readonly stopFn: () => Promise<void>) {}

  static async start<K extends TopicId>(kafka: Kafka, codecs: EventCodecs, id: K): Promise<TopicCollector<K>> {
    const consumer = kafka.consumer({ groupId: `test-collector-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 100 });
    const collector = new TopicCollector<K>(async () => {
      await consumer.disconnect();
    });
    await consumer.connect();
    await consumer.subscribe({ topic: codecs.topic(id), fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (!message.value) return;
        collector.events.push({ key: message.key?.toString() ?? null, value: await codecs.of(id).decode(message.value) });
      },
    });
    return collector;
  }

  /** Waits until at least `n` events arrived, then `settleMs` more (to catch duplicates). */
  async waitFor(n: number, timeoutMs = 60_000, settleMs = 1500): Promise<Array<{ key: string | null; value: TopicValues[K] }>> {
    await waitFor(`${n} events`, () => this.events.length >= n, { timeoutMs }).catch(() => {
      throw new Error(`only ${this.events.length} of ${n} events arrived within ${timeoutMs} ms`);
    });
    await new Promise((r) => setTimeout(r, settleMs)); // absence window: duplicates would arrive by now
    return this.events;
  }

  stop(): Promise<void> {
    return this.stopFn();
  }
}

export interface TestKafka {
  brokers: string[];
  registryUrl: string;
  naming: TopicNaming;
  kafka: Kafka;
  codecs: EventCodecs;
}

export async function testKafka(stack: { brokers: string; registryUrl: string }, prefix: string): Promise<TestKafka> {
  const brokers = stack.brokers.split(',');
  const naming = { prefix };
  const kafka = createKafka({ brokers, clientId: 'gateway-test', logger: createLogger('kafka-test', 'error') });
  const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming });
  await ensureTopics(kafka, { naming, partitions: 3, ids: ['turns', 'feedback', 'weights'] });
  return { brokers, registryUrl: stack.registryUrl, naming, kafka, codecs };
}
