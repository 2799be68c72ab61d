export * from './types.ts';
export { TOPICS, topicName, valueSubject, type TopicId, type TopicNaming, type TopicSpec } from './topics.ts';
export {
  createRegistryClient,
  registerSchemas,
  registryReady,
  registrySettingError,
  securityOf,
  type RegistryOptions,
  type RegistrySecurity,
  type SchemaIds,
} from './registry.ts';
export { AvroCodec, avroTypeOf, encodedSize, invalidPaths, type Codec } from './codec.ts';
export { ROLLOUT_METADATA, isRolloutStep } from './rollout-metadata.ts';
export { samplingOf } from './sampling-of.ts';
export { deterministicId, importedTurnId, importedFeedbackId } from './deterministic-id.ts';
