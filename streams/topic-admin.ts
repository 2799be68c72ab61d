/**
 * Creates every topic of the catalogue with its partitions, replication and cleanup
 * policy. Topics are created explicitly: KRaft brokers here run without auto-creation.
 */
import type { Kafka } from 'kafkajs';
import { TOPICS, topicName, type TopicId, type TopicNaming } from '../schemas/index.ts';

export interface TopicAdminOptions {
  naming?: TopicNaming;
  /** Partitions per topic; co-keyed topics must share it. @default 6 */
  partitions?: number;
  /** @default 1 (one broker) */
  replicationFactor?: number;
  /** Which topics. @default all */
  ids?: readonly TopicId[];
}

export async function ensureTopics(kafka: Kafka, options: TopicAdminOptions = {}): Promise<string[]> {
  const ids = options.ids ?? (Object.keys(TOPICS) as TopicId[]);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const wanted = ids.map((id) => ({ id, name: topicName(id, options.naming) }));
    const missing = wanted.filter((w) => !existing.has(w.name));
    if (missing.length > 0) {
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map(({ id, name }) => ({
          topic: name,
          numPartitions: options.partitions ?? 6,
          replicationFactor: options.replicationFactor ?? 1,
          configEntries: [
            { name: 'cleanup.policy', value: TOPICS[id].cleanup },
            { name: 'retention.ms', value: String(TOPICS[id].retentionMs) },
            ...(TOPICS[id].cleanup.includes('compact') ? [{ name: 'min.cleanable.dirty.ratio', value: '0.1' }] : []),
          ],
        })),
      });
    }
    return wanted.map((w) => w.name);
  } finally {
    await admin.disconnect();
  }
}
