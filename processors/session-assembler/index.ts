export * from './session-assembler.ts';
export { extractNextState, feedbackItem, matchesResponse, type ExtractedNextState } from './next-state.ts';
export { emptySession, isTrainable, toPairTurn } from './session-state.ts';
export * from './options.ts';
export { StreamClock } from './stream-clock.ts';
export { StreamAssembler, type AssemblerObserver, type AssemblerRecord, type AssemblerState } from './stream-assembler.ts';
export { startSessionAssembler, type SessionAssemblerServiceOptions } from './session-assembler-service.ts';
