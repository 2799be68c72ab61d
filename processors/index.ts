/** What other folders may use of the processors. */
export * as sessionAssembler from './session-assembler/index.ts';
export { applyTurn, applyFeedback, expire, isTrainable, type SessionAssemblerOptions, type EndPolicy } from './session-assembler/index.ts';
export {
  createEmbeddedJudge,
  createLlmJudge,
  majorityVote,
  selectHint,
  parseBoxed,
  type Judge,
  type JudgeMode,
  type EmbeddedJudgeOptions,
  type LlmJudgeOptions,
} from './judge/index.ts';
export {
  buildSample,
  createPolicyTeacher,
  createUpstreamTeacher,
  appendHint,
  type Teacher,
  type SampleBuilderOptions,
  type TrainMethod,
  type UpstreamTeacherOptions,
} from './sample-builder/index.ts';
