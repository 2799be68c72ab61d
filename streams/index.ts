export { Kafka, logLevel } from './kafkajs.ts';
export { createKafka, kafkaConfig, parseBrokers, settingErrorOf, type KafkaClientOptions } from './kafka-client.ts';
export {
  kafkaSecurityConfig,
  kafkaSettingError,
  securityProtocol,
  SASL_MECHANISMS,
  type KafkaSasl,
  type KafkaSecurity,
  type SaslMechanism,
} from './kafka-security.ts';
export type { ConnectionSecurity } from './connection-security.ts';
export { createTopicsRetrying, ensureTopics, type TopicAdminOptions } from './topic-admin.ts';
export { createEventCodecs, EventCodecs, type EventCodecsOptions, type TopicValues } from './event-codecs.ts';
export {
  EventProducer,
  maxValueBytes,
  partitioner,
  RECORD_OVERHEAD_BYTES,
  type EventProducerOptions,
  type OutgoingEvent,
} from './producer.ts';
export { followTopic, type Follower, type FollowOptions } from './follow.ts';
export { PublishConsumer, type PublishConsumerOptions } from './publish-consumer.ts';
export { FlushConsumer, type FlushConsumerOptions, type FlushConsumerStats } from './flush-consumer.ts';
export { readToEnd, type RawRecord, type ReadToEndOptions } from './topic-reader.ts';
export { deadLetter } from './dead-letter.ts';
export {
  deadLetterId,
  readDeadLetters,
  replayDeadLetters,
  type DeadLetterFilter,
  type DeadLetterReplayOptions,
  type DeadLetterReplayResult,
  type StoredDeadLetter,
} from './dead-letter-replay.ts';
export { Outbox, type OutboxRecord, type OutboxStats } from './outbox.ts';
export {
  runProcessor,
  type HandlerContext,
  type InputRecord,
  type ProcessorHandle,
  type ProcessorOptions,
  type ProcessorStats,
  type PunctuateContext,
  type StateAccess,
} from './processor.ts';
export { KeyedWorkPool } from './work-pool.ts';
export { OffsetTracker } from './offset-tracker.ts';
export { waitForDependencies, type DependenciesOptions } from './dependencies.ts';
export {
  Transactions,
  type TransactionContent,
  type TransactionOutput,
  type TransactionOffsets,
  type TransactionsOptions,
} from './transactions.ts';
export * from './weight-blobs.ts';
