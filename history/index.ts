/** History import and replay: what the CLI, benchmarks and tests may use. */
export {
  importFile,
  parseLine,
  parserFor,
  existingIds,
  leadingStringOf,
  IMPORT_FORMATS,
  type ImportFormat,
  type ImportOptions,
  type ImportProgress,
  type ImportSummary,
  type ImportError,
} from './import.ts';
export { ImportLineError, type ParsedLine } from './formats/common.ts';
export { openclawRecordParser, cleanRenderedResponse } from './formats/openclaw-record.ts';
export { openaiChatParser } from './formats/openai-chat.ts';
export { runReplay, type ReplayOptions, type ReplayProgress, type ReplaySummary, type StageProgress, type StageName } from './replay.ts';
export { summarize } from './summary.ts';
export { assemblePartition, EventTimeAssembler, mergeByEventTime, watermarks, type HistoryEvent } from './event-time-assembler.ts';
export { parseBound, resolvePlan, readPlan, type Bound, type ReplayPlan } from './replay-range.ts';
export { loadReplayConfig, validateReplayConfig, type ReplayConfig, type ReplayJudgeConfig } from './replay-config.ts';
