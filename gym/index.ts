// The gym's public surface: what other folders may use.
export { createSandbox, noSandboxMessage, prepareSandbox } from './sandbox/create-sandbox.ts';
export { INSTALL_BUBBLEWRAP } from './sandbox/install-bubblewrap.ts';
export { detectSandbox, type BackendReport, type SandboxDetection, type SandboxReport } from './sandbox/detect-sandbox.ts';
export {
  DEFAULT_CAPS,
  DEFAULT_LIMITS,
  SANDBOX_WORKSPACE,
  type CapsReport,
  type ExecOptions,
  type ExecResult,
  type KilledBy,
  type Sandbox,
  type SandboxCaps,
  type SandboxCapsInForce,
  type SandboxKind,
  type SandboxLimits,
  type SandboxOptions,
  type SandboxUsage,
} from './sandbox/sandbox.ts';
export { confinePath } from './sandbox/workspace.ts';
export { loadTaskSuite, parseTaskSuite } from './tasks/parse-task-suite.ts';
export { DEFAULT_HELD_OUT, splitTasks, type SplitTasksOptions, type TaskSplits } from './tasks/split-tasks.ts';
export {
  TOOL_NAMES,
  verifyParts,
  type Task,
  type TaskSpec,
  type TaskSplit,
  type TaskVerify,
  type ToolName,
  type VerifyPart,
} from './tasks/task.ts';
export { explainCheck, verifyRollout, VERIFY_LIMITS, type Verdict, type VerifyOptions } from './verify/verify-rollout.ts';
export { runRollout } from './agent/run-rollout.ts';
export type { AgentKind, RolloutMetadata, RolloutOptions, RolloutResult, SamplingOptions, StoppedBy } from './agent/rollout-types.ts';
export type { OpenClawAgentOptions } from './agent/rollout-types.ts';
export { LEARNABLE_BAND, measureBaseRates, type BaseRateOptions, type BaseRates, type TaskBaseRate } from './base-rates.ts';
export { runGym, runIdentity, splitFigures, summarize, type GymResult, type RunIdentity, type SplitFigures } from './runner/run-gym.ts';
export { mergeGymResults, type MergeSource } from './runner/merge-runs.ts';
export { signalProbability, TaskSchedule, type TaskSampling, type TaskScheduleOptions } from './runner/task-schedule.ts';
export { gymSettings, trainingReward, type GymReward, type GymRunOptions, type GymSettings } from './runner/gym-options.ts';
export { DEFAULT_BASE_RATE_N, runBaseRates, type BaseRateReport, type BaseRateRunOptions } from './runner/run-base-rates.ts';
export { writeGymReports, gymSvg, gymCsv } from './runner/gym-report.ts';
