export { groupAdvantages } from './group-advantages.ts';
export { batchSamples, type BatchReport, type BatchSampleOptions } from './batch-samples.ts';
export { BatchCore, type GroupBuilderOptions, type BatchEvents } from './batch-core.ts';
export { startGroupBuilder, type GroupBuilderServiceOptions } from './group-builder-service.ts';
