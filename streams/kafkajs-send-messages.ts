/**
 * kafkajs' `sendMessages` (its producer's send and a transaction's), with its retry fixed so that a
 * send that resolves has written every partition.
 *
 * kafkajs 2.2.4 keeps the responses of a send by broker and, on a retry, asks only the brokers
 * without one. When a broker dies mid-send, its partitions move to brokers that may have answered
 * already for partitions of their own: those are skipped, the moved partitions' records are never
 * sent, and the send resolves as if they were (tulios/kafkajs#1303, open). On three brokers with one
 * killed (-9), 22 of 60 acks=all records were lost this way (test/integration/infra/three-brokers).
 *
 * Here the acknowledged partitions are kept instead, and a retry sends every other partition to
 * its leader as the refreshed metadata names it, once every leader's request has settled (kafkajs
 * retries as soon as one fails, and sends again what another still has in flight). Records are grouped into partitions once, so a
 * keyless record cannot land in another partition on a retry. Everything else (sequence numbers,
 * the broker locks, transactions, the error handling that drives the retrier) is kafkajs' own.
 */
import { createRequire } from 'node:module';
import type { Broker, Message, PartitionMetadata, ProducerBatch, RecordMetadata, TopicMessages } from 'kafkajs';

const require = createRequire(import.meta.url);
const internal = (path: string): unknown => require(require.resolve(`kafkajs/src/${path}`));

type KafkaError = Error & { retriable?: boolean; host?: string; port?: number };
const { KafkaJSMetadataNotLoaded, KafkaJSError } = internal('errors.js') as Record<
  string,
  new (message: string, extra?: object) => KafkaError
>;
const { staleMetadata } = internal('protocol/error.js') as { staleMetadata: (e: unknown) => boolean };
const groupMessagesPerPartition = internal('producer/groupMessagesPerPartition.js') as (o: {
  topic: string;
  partitionMetadata: PartitionMetadata[];
  messages: Message[];
  partitioner: unknown;
}) => Record<string, Message[]>;
const createTopicData = internal('producer/createTopicData.js') as (
  d: Array<{ topic: string; partitions: number[]; messagesPerPartition: Record<string, Message[]> }>,
) => Array<{ topic: string; partitions: Array<{ partition: number; messages: Message[]; firstSequence?: number }> }>;
const responseSerializer = internal('producer/responseSerializer.js') as (response: unknown) => RecordMetadata[];

/** The parts of kafkajs' cluster, EOS manager and logger that a send uses. */
interface SendContext {
  logger: { debug(m: string, e?: object): void; error(m: string, e?: object): void };
  cluster: {
    refreshMetadataIfNecessary(): Promise<void>;
    refreshMetadata(): Promise<void>;
    findTopicPartitionMetadata(topic: string): PartitionMetadata[];
    findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
    findBroker(o: { nodeId: string }): Promise<Broker>;
    addMultipleTargetTopics(topics: string[]): Promise<void>;
    removeBroker(o: { host?: string; port?: number }): void;
    isConnected(): boolean;
    connect(): Promise<void>;
    targetTopics: Set<string>;
  };
  partitioner: unknown;
  eosManager: {
    isTransactional(): boolean;
    getTransactionalId(): string;
    getProducerId(): number;
    getProducerEpoch(): number;
    getSequence(topic: string, partition: number): number;
    updateSequence(topic: string, partition: number, increment: number): void;
    acquireBrokerLock(broker: Broker): Promise<void>;
    releaseBrokerLock(broker: Broker): Promise<void>;
    addPartitionsToTransaction(topicData: unknown): Promise<void>;
  };
  retrier: <T>(fn: (bail: (e: Error) => void, retryCount: number, retryTime: number) => Promise<T>) => Promise<T>;
}

type Send = (o: Pick<ProducerBatch, 'acks' | 'timeout' | 'compression'> & { topicMessages: TopicMessages[] }) => Promise<RecordMetadata[]>;

const key = (topic: string, partition: number | string): string => `${topic}\u0000${partition}`;

export function createSendMessages({ logger, cluster, partitioner, eosManager, retrier }: SendContext): Send {
  return async ({ acks, timeout, compression, topicMessages }) => {
    /** Each acknowledged partition's response (none for acks=0), by topic and partition. */
    const acknowledged = new Map<string, RecordMetadata | null>();
    /** The records of each topic by partition, grouped on the first attempt that has metadata. */
    const grouped = new Map<string, Record<string, Message[]>>();

    const sendPending = async (): Promise<void> => {
      await cluster.refreshMetadataIfNecessary();
      const perLeader = new Map<string, Array<{ topic: string; partitions: number[]; messagesPerPartition: Record<string, Message[]> }>>();
      for (const { topic, messages } of topicMessages) {
        const partitionMetadata = cluster.findTopicPartitionMetadata(topic);
        if (partitionMetadata.length === 0) {
          logger.debug('Producing to topic without metadata', { topic, targetTopics: Array.from(cluster.targetTopics) });
          throw new KafkaJSMetadataNotLoaded('Producing to topic without metadata');
        }
        let messagesPerPartition = grouped.get(topic);
        if (!messagesPerPartition) {
          messagesPerPartition = groupMessagesPerPartition({ topic, partitionMetadata, messages, partitioner });
          grouped.set(topic, messagesPerPartition);
        }
        const pending = Object.keys(messagesPerPartition)
          .map(Number)
          .filter((p) => !acknowledged.has(key(topic, p)));
        const partitionsPerLeader = cluster.findLeaderForPartitions(topic, pending);
        const led = new Set(Object.values(partitionsPerLeader).flat());
        const leaderless = pending.filter((p) => !led.has(p));
        // kafkajs drops a partition its metadata lacks; sending without it would lose its records.
        if (leaderless.length > 0) {
          throw new KafkaJSError(`no leader known for ${topic} partitions ${leaderless.join(', ')}`, { retriable: true });
        }
        for (const [nodeId, partitions] of Object.entries(partitionsPerLeader)) {
          const list = perLeader.get(nodeId) ?? [];
          list.push({ topic, partitions, messagesPerPartition });
          perLeader.set(nodeId, list);
        }
      }
      // Every leader's request settles before a retry: one still in flight when another failed
      // would otherwise be sent again by the retry, with the next sequence numbers (written twice).
      const settled = await Promise.allSettled(
        [...perLeader.entries()].map(async ([nodeId, topicDataForBroker]) => {
          const broker = await cluster.findBroker({ nodeId });
          const topicData = createTopicData(topicDataForBroker);
          await eosManager.acquireBrokerLock(broker);
          try {
            if (eosManager.isTransactional()) await eosManager.addPartitionsToTransaction(topicData);
            for (const { topic, partitions } of topicData) {
              for (const entry of partitions) {
                entry.firstSequence = eosManager.getSequence(topic, entry.partition);
                eosManager.updateSequence(topic, entry.partition, entry.messages.length);
              }
            }
            let response: unknown;
            try {
              response = await (broker as unknown as { produce(o: object): Promise<unknown> }).produce({
                transactionalId: eosManager.isTransactional() ? eosManager.getTransactionalId() : undefined,
                producerId: eosManager.getProducerId(),
                producerEpoch: eosManager.getProducerEpoch(),
                acks,
                timeout,
                compression,
                topicData,
              });
            } catch (e) {
              for (const { topic, partitions } of topicData) {
                for (const entry of partitions) eosManager.updateSequence(topic, entry.partition, -entry.messages.length);
              }
              throw e;
            }
            if (acks === 0) {
              for (const { topic, partitions } of topicData)
                for (const entry of partitions) acknowledged.set(key(topic, entry.partition), null);
            } else {
              for (const r of responseSerializer(response)) acknowledged.set(key(r.topicName, r.partition), r);
            }
          } finally {
            await eosManager.releaseBrokerLock(broker);
          }
        }),
      );
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    };

    return retrier(async (bail, retryCount, retryTime) => {
      await cluster.addMultipleTargetTopics(topicMessages.map(({ topic }) => topic));
      try {
        await sendPending();
        return [...acknowledged.values()].filter((r): r is RecordMetadata => r !== null);
      } catch (err) {
        const e = err as KafkaError;
        if (e.name === 'KafkaJSConnectionClosedError') cluster.removeBroker({ host: e.host, port: e.port });
        if (!cluster.isConnected()) {
          logger.debug(`Cluster has disconnected, reconnecting: ${e.message}`, { retryCount, retryTime });
          await cluster.connect();
          await cluster.refreshMetadata();
          throw e;
        }
        if (
          staleMetadata(e) ||
          e.name === 'KafkaJSMetadataNotLoaded' ||
          e.name === 'KafkaJSConnectionError' ||
          e.name === 'KafkaJSConnectionClosedError' ||
          (e.name === 'KafkaJSProtocolError' && e.retriable) ||
          (e.name === 'KafkaJSError' && e.retriable)
        ) {
          logger.error(`Failed to send messages: ${e.message}`, { retryCount, retryTime });
          await cluster.refreshMetadata();
          throw e;
        }
        logger.error(`${e.message}`, { retryCount, retryTime });
        if (e.retriable) throw e;
        bail(e);
        return [];
      }
    });
  };
}
