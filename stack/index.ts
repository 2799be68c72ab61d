/**
 * The composition root: every service of a turnstream stack built from one settings object and
 * the overrides a caller names. The CLI (`up`, `gateway`, `train`, `process`, `sink`), eval, gym
 * and bench build their services here, so what `up` runs is what they measure.
 */
export {
  resolveSettings,
  STACK_DEFAULTS,
  type StackSettings,
  type StackSettingsInput,
  type GatewaySettings,
  type UpstreamSettings,
  type ModelSettings,
  type LlamaServeSettings,
  type TfjsSettings,
  type GrpoSettings,
  type ProcessorSettings,
  type SessionSettings,
  type JudgeSettings,
  type TeacherSettings,
  type ClickhouseSettings,
  type SinkSettings,
  type TrainSettings,
  type FamilySettingKey,
} from './settings.ts';
export { servedModel, familyOf, type ServedModel, type ServedModelOptions } from './served-model.ts';
export { stackEndpoints, connectService, type StackLink } from './endpoints.ts';
export { gatewayOptions, gatewayService, ownGateway, type GatewayOverrides } from './gateway-service.ts';
export {
  learnerPlan,
  learnerService,
  namedOverrides,
  type LearnerOverrides,
  type LearnerPlan,
  type LearnerService,
} from './learner-service.ts';
export {
  PROCESSORS,
  processorService,
  processorOptions,
  processorServices,
  loadSettingsTeacher,
  teacherUpstream,
  analyticsOptions,
  sinkOptions,
  sinkService,
  type ProcessorName,
  type ProcessorOverrides,
  type SinkOverrides,
} from './processor-services.ts';
export { inProcessPipeline, type InProcessPipeline, type InProcessPipelineOptions } from './in-process-pipeline.ts';
export { awaitServedVersion, gatewayVersionProbe, type AwaitServedVersionOptions, type ServedVersion } from './served-version.ts';
