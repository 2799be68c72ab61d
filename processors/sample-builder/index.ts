export {
  buildSample,
  type BuildCallOptions,
  type BuildResult,
  type SampleBuilderOptions,
  type SkipReason,
  type TrainMethod,
} from './build-sample.ts';
export { appendHint, HINT_HEADER, type Teacher, type TeacherScoreOptions, type TeacherScores } from './teacher.ts';
export { PolicyTeacher, createPolicyTeacher, type ScoringPolicy } from './policy-teacher.ts';
export { UpstreamTeacher, createUpstreamTeacher, type UpstreamTeacherOptions } from './upstream-teacher.ts';
export { loadTeacher, type LoadTeacherOptions } from './load-teacher.ts';
export { LlamaTeacher, type LlamaTeacherOptions } from './llama-teacher.ts';
export { startSampleBuilder, type SampleBuilderServiceOptions } from './sample-builder-service.ts';
