// The eval's public surface: what other folders may use.
export { BUILTIN_PERSONAS_FILE, DEFAULT_PERSONAS_FILE } from './persona.ts';
export { runEvalCommand, type EvalCommandOutcome, type EvalCommandSettings } from './eval-command.ts';
export type { EvalConfig, EvalServedModel } from './eval-config.ts';
export { evalLearnerOverrides, evalLearnerPlan, type EvalLearnerOptions, type EvalLearnerReport } from './eval-learner.ts';
export { applyRunDefaults, type EvalFlags } from './eval-flags.ts';
export type { EvalCommandLine } from './eval-workers.ts';
