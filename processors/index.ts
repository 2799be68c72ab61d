/** What other folders (cli, replay, bench, tests) may use of the processors. */
export { startSessionAssembler, type SessionAssemblerServiceOptions } from './session-assembler/index.ts';
export { startJudge, type JudgeServiceOptions } from './judge/index.ts';
export { startSampleBuilder, type SampleBuilderServiceOptions } from './sample-builder/index.ts';
export { startTrajectoryAssembler, type TrajectoryAssemblerServiceOptions } from './trajectory-assembler/index.ts';
export { startGroupBuilder, type GroupBuilderServiceOptions } from './group-builder/index.ts';
export { TrajectoryCore, stepOf, DEFAULT_SETTLE_MS, type TrajectoryAssemblerOptions } from './trajectory-assembler/index.ts';
export { BatchCore, batchSamples, groupAdvantages, type BatchReport, type GroupBuilderOptions } from './group-builder/index.ts';
export { defaultGroupId, type ServiceOptions } from './service-options.ts';
export * from './defaults.ts';
export {
  startClickhouseSink,
  SINK_TOPICS,
  type ClickhouseSinkHandle,
  type ClickhouseSinkOptions,
  type SinkStats,
} from './clickhouse-sink/index.ts';

export * from './session-assembler/index.ts';
export {
  createJudge,
  createEmbeddedJudge,
  createLlmJudge,
  EmbeddedJudge,
  LlmJudge,
  majorityVote,
  makeJudgement,
  selectHint,
  parseBoxed,
  parseHint,
  prmPrompt,
  hintPrompt,
  type CreateJudgeOptions,
  type Judge,
  type JudgeMode,
  type EmbeddedJudgeOptions,
  type LlmJudgeOptions,
} from './judge/index.ts';
export {
  buildSample,
  loadTeacher,
  LlamaTeacher,
  createPolicyTeacher,
  createUpstreamTeacher,
  appendHint,
  type BuildResult,
  type LoadTeacherOptions,
  type Teacher,
  type TeacherScores,
  type SampleBuilderOptions,
  type TrainMethod,
  type UpstreamTeacherOptions,
} from './sample-builder/index.ts';
