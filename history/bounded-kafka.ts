/**
 * A view of a kafkajs client whose consumers never hand a record at or after a given end offset
 * to their `eachBatch` handler, and pause a partition once its end is reached. The replay gives it
 * to its session assembler so that `--to` is exact: the processor runtime has no record filter of
 * its own (a `ProcessorOptions` bound would be the proper home for this; see the report).
 */
import type { Batch, Consumer, ConsumerRunConfig, EachBatchPayload, Kafka } from 'kafkajs';

/** End offsets (exclusive) by topic and partition. */
export type EndOffsets = Map<string, Map<number, bigint>>;

export interface BoundedKafka {
  kafka: Kafka;
  /** Records fetched at or after their end, and dropped. */
  skipped(): number;
}

export function boundedKafka(kafka: Kafka, ends: EndOffsets): BoundedKafka {
  let skipped = 0;
  const view = Object.create(kafka) as Kafka;
  view.consumer = (config) => {
    const consumer: Consumer = kafka.consumer(config);
    const run = consumer.run.bind(consumer);
    consumer.run = (runConfig?: ConsumerRunConfig) => {
      const eachBatch = runConfig?.eachBatch;
      if (!eachBatch) return run(runConfig);
      return run({
        ...runConfig,
        eachBatch: async (payload: EachBatchPayload) => {
          const { topic, partition } = payload.batch;
          const end = ends.get(topic)?.get(partition);
          if (end === undefined) return eachBatch(payload);
          const messages = payload.batch.messages.filter((m) => BigInt(m.offset) < end);
          skipped += payload.batch.messages.length - messages.length;
          if (messages.length < payload.batch.messages.length || BigInt(payload.batch.lastOffset()) >= end - 1n) {
            consumer.pause([{ topic, partitions: [partition] }]);
          }
          // The range's end is the end of the stream for this consumer: its lag counts to there.
          const hw = BigInt(payload.batch.highWatermark);
          if (messages.length === payload.batch.messages.length && hw <= end) return eachBatch(payload);
          const batch = Object.create(payload.batch) as Batch;
          Object.defineProperty(batch, 'messages', { value: messages });
          Object.defineProperty(batch, 'highWatermark', { value: String(hw < end ? hw : end) });
          return eachBatch({ ...payload, batch });
        },
      });
    };
    return consumer;
  };
  return { kafka: view, skipped: () => skipped };
}
