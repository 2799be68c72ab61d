/**
 * Creates every topic of the catalogue with its partitions, replication (three copies where the
 * cluster has three brokers or more, two of them in sync for a write), cleanup policy and
 * `max.message.bytes`. Topics are created explicitly: KRaft brokers here run without
 * auto-creation. Creation is retried while the broker answers that a just-created topic's
 * partitions are not hosted yet (its metadata still propagating) or with another retriable
 * error; a topic another process created meanwhile counts as created.
 *
 * A topic that exists with a smaller `max.message.bytes` than the catalogue's (created by an
 * older version, which left the broker's 1 MiB default) is raised to it, keeping the topic's
 * other settings; a larger one set by an operator is left alone.
 */
import type { Admin, ITopicConfig, Kafka } from 'kafkajs';
import kafkajs from './kafkajs.ts';
import { retry } from '../core/index.ts';
import { settingErrorOf } from './kafka-client.ts';
import { TOPICS, topicName, type TopicId, type TopicNaming } from '../schemas/index.ts';

export interface TopicAdminOptions {
  naming?: TopicNaming;
  /** Partitions per topic; co-keyed topics must share it. @default 6 */
  partitions?: number;
  /** Copies of each partition. @default min(3, the brokers of the cluster) */
  replicationFactor?: number;
  /**
   * Copies that must have a record before an `acks=all` write of it succeeds (`min.insync.replicas`):
   * with 2 of 3 a topic keeps taking writes while one broker is down, and a record acknowledged is
   * on two brokers. @default 2 when the replication factor is 2 or more, else 1
   */
  minInsyncReplicas?: number;
  /** Which topics. @default all */
  ids?: readonly TopicId[];
}

/** Kafka's ConfigSource for a setting made on the topic itself. */
const TOPIC_CONFIG_SOURCE = 1;
// kafkajs is CommonJS: its enums come off the default export.
const { ConfigResourceTypes } = kafkajs;

export async function ensureTopics(kafka: Kafka, options: TopicAdminOptions = {}): Promise<string[]> {
  const ids = options.ids ?? (Object.keys(TOPICS) as TopicId[]);
  const admin = kafka.admin();
  try {
    await admin.connect();
  } catch (err) {
    // The first contact of most services: a refused login or an untrusted certificate ends here, named.
    throw settingErrorOf(kafka, err) ?? err;
  }
  try {
    const existing = new Set(await admin.listTopics());
    const wanted = ids.map((id) => ({ id, name: topicName(id, options.naming) }));
    const missing = wanted.filter((w) => !existing.has(w.name));
    if (missing.length > 0) {
      const replicationFactor = options.replicationFactor ?? Math.min(3, (await admin.describeCluster()).brokers.length);
      const minInsync = options.minInsyncReplicas ?? (replicationFactor >= 2 ? 2 : 1);
      await createTopicsRetrying(admin, {
        topics: missing.map(({ id, name }) => ({
          topic: name,
          numPartitions: options.partitions ?? 6,
          replicationFactor,
          configEntries: [
            { name: 'min.insync.replicas', value: String(minInsync) },
            { name: 'cleanup.policy', value: TOPICS[id].cleanup },
            { name: 'retention.ms', value: String(TOPICS[id].retentionMs) },
            { name: 'max.message.bytes', value: String(TOPICS[id].maxMessageBytes) },
            ...(TOPICS[id].cleanup.includes('compact') ? [{ name: 'min.cleanable.dirty.ratio', value: '0.1' }] : []),
          ],
        })),
      });
    }
    const old = wanted.filter((w) => existing.has(w.name));
    if (old.length > 0) await raiseMessageLimits(admin, old);
    return wanted.map((w) => w.name);
  } finally {
    await admin.disconnect();
  }
}

/**
 * Creates `topics` and waits for their leaders, again while the broker answers that a just-created
 * topic's partitions are not hosted yet (UNKNOWN_TOPIC_OR_PARTITION, which kafkajs's own wait for
 * leaders does not retry) or with another retriable error.
 */
export async function createTopicsRetrying(admin: Admin, { topics }: { topics: ITopicConfig[] }): Promise<void> {
  await retry(() => admin.createTopics({ waitForLeaders: true, topics }), {
    attempts: 7,
    retryIf: (err) => {
      const e = err as { retriable?: boolean; type?: string; originalError?: { type?: string } };
      return e.retriable === true || [e.type, e.originalError?.type].includes('UNKNOWN_TOPIC_OR_PARTITION');
    },
  });
}

/** Raises `max.message.bytes` of existing topics to the catalogue's, keeping their other topic-level settings. */
async function raiseMessageLimits(admin: Admin, topics: Array<{ id: TopicId; name: string }>): Promise<void> {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: topics.map((t) => ({ type: ConfigResourceTypes.TOPIC, name: t.name })),
  });
  const changes = [];
  for (const r of resources) {
    const t = topics.find((x) => x.name === r.resourceName);
    if (!t || r.errorCode !== 0) continue;
    const limit = r.configEntries.find((e) => e.configName === 'max.message.bytes');
    if (limit && Number(limit.configValue) >= TOPICS[t.id].maxMessageBytes) continue;
    // alterConfigs replaces the topic's settings: send the ones it has along with the new limit.
    const kept = r.configEntries
      .filter((e) => e.configSource === TOPIC_CONFIG_SOURCE && e.configName !== 'max.message.bytes' && !e.isSensitive)
      .map((e) => ({ name: e.configName, value: e.configValue }));
    changes.push({
      type: ConfigResourceTypes.TOPIC,
      name: t.name,
      configEntries: [...kept, { name: 'max.message.bytes', value: String(TOPICS[t.id].maxMessageBytes) }],
    });
  }
  if (changes.length > 0) await admin.alterConfigs({ validateOnly: false, resources: changes });
}
