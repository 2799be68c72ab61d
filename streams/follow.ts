/**
 * Follows a topic with a plain (non-transactional) consumer and decodes each event; for
 * services that react to events without producing any (the gateway following weights).
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { TopicId } from '../schemas/index.ts';
import type { EventCodecs, TopicValues } from './event-codecs.ts';
import { createLogger, type Logger } from '../core/index.ts';

export interface FollowOptions<K extends TopicId> {
  /** @default a fresh group per follower, so every follower sees every event */
  groupId?: string;
  /** @default true */
  fromBeginning?: boolean;
  /**
   * Start at the first event at or after this time (ms since the epoch) instead, in every
   * partition; partitions with nothing that recent start at their end. @default undefined
   */
  startAt?: number;
  logger?: Logger;
  onEvent(value: TopicValues[K], meta: { key: string | null; partition: number; offset: string }): Promise<void> | void;
}

export interface Follower {
  stop(): Promise<void>;
}

export async function followTopic<K extends TopicId>(
  kafka: Kafka,
  codecs: EventCodecs,
  id: K,
  options: FollowOptions<K>,
): Promise<Follower> {
  const log = options.logger ?? createLogger(`follow-${id}`);
  const groupId = options.groupId ?? `turnstream-follow-${id}-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic: codecs.topic(id), fromBeginning: options.fromBeginning ?? true });
  await consumer.run({
    eachMessage: async ({ message, partition }) => {
      if (!message.value) return;
      try {
        const value = await codecs.of(id).decode(message.value);
        await options.onEvent(value, { key: message.key?.toString('utf8') ?? null, partition, offset: message.offset });
      } catch (err) {
        // A follower cannot dead-letter (it produces nothing); it logs and moves on.
        log.warn({ err: (err as Error).message, partition, offset: message.offset }, 'event skipped');
      }
    },
  });
  if (options.startAt !== undefined) {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topic = codecs.topic(id);
      for (const { partition, offset } of await admin.fetchTopicOffsetsByTimestamp(topic, options.startAt)) {
        // -1: nothing at or after the time; the consumer is at the end already (fromBeginning false).
        if (offset !== '-1') consumer.seek({ topic, partition, offset });
      }
    } finally {
      await admin.disconnect();
    }
  }
  return {
    stop: async () => {
      await consumer.disconnect();
      if (!options.groupId) {
        const admin = kafka.admin();
        await admin.connect();
        await admin.deleteGroups([groupId]).catch(() => undefined);
        await admin.disconnect();
      }
    },
  };
}
