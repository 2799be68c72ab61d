export {
  applyTurn,
  applyFeedback,
  dueAt,
  expire,
  forget,
  forgettable,
  idleAt,
  release,
  type AssemblerStep,
  type IgnoredReason,
  type ReleaseStep,
} from './session-assembler.ts';
export { extractNextState, feedbackItem, matchesResponse, type ExtractedNextState } from './next-state.ts';
export { emptySession, isTrainable, toPairTurn } from './session-state.ts';
export {
  DEFAULT_CLOSED_RETENTION_MS,
  DEFAULT_FEEDBACK_GRACE_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  resolveAssemblerOptions,
  type EndPolicy,
  type ResolvedAssemblerOptions,
  type SessionAssemblerOptions,
} from './options.ts';
export { StreamClock } from './stream-clock.ts';
export { StreamAssembler, type AssemblerObserver, type AssemblerRecord, type AssemblerState } from './stream-assembler.ts';
export { startSessionAssembler, type SessionAssemblerServiceOptions } from './session-assembler-service.ts';
