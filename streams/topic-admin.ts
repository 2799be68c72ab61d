/**
 * Creates every topic of the catalogue with its partitions, replication and cleanup
 * policy. Topics are created explicitly: KRaft brokers here run without auto-creation.
 * Creation is retried while the broker answers that a just-created topic's partitions are not
 * hosted yet (its metadata still propagating) or with another retriable error; a topic another
 * process created meanwhile counts as created.
 */
import type { Kafka } from 'kafkajs';
import pRetry from 'p-retry';
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
      await pRetry(
        () =>
          admin.createTopics({
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
          }),
        {
          retries: 6,
          minTimeout: 200,
          factor: 2,
          shouldRetry: ({ error }) => {
            const e = error as { retriable?: boolean; type?: string; originalError?: { type?: string } };
            return e.retriable === true || [e.type, e.originalError?.type].includes('UNKNOWN_TOPIC_OR_PARTITION');
          },
        },
      );
    }
    return wanted.map((w) => w.name);
  } finally {
    await admin.disconnect();
  }
}
