/**
 * The processors' defaults: what `turnstream process` and `sink` (and `up`) run with when nothing
 * is set, and what each stage falls back to for an option left out. A file that imports nothing
 * at run time, so that reading the configuration (cli/config.ts, through stack/settings.ts) does
 * not load the processors.
 */
import type { JudgeMode } from './judge/judge.ts';

/** What every processor service falls back to (`PROCESSOR_*` when nothing is set). */
export const PROCESSOR_DEFAULTS = Object.freeze({ sessionTimeoutMs: 30_000 });

/** The assembler's defaults (`turnstream process session-assembler`'s when nothing is set). */
export const SESSION_ASSEMBLER_DEFAULTS = Object.freeze({
  idleTimeoutMs: 30 * 60 * 1000,
  endPolicy: 'masked' as 'drop' | 'masked',
  maxRecentIds: 512,
  feedbackGraceMs: 5000,
  closedRetentionMs: 24 * 3600 * 1000,
});

/** The LLM judge's defaults (`JUDGE_*` when nothing is set). */
export const JUDGE_DEFAULTS = Object.freeze({
  model: 'judge',
  mode: 'combined' as JudgeMode,
  votes: 3,
  hintVotes: 1,
  temperature: 0.6,
  maxTokens: 1024,
  timeoutMs: 60_000,
  retries: 2,
  minBackoffMs: 500,
  maxQuoteChars: 4000,
});

/** The sample builder's defaults (`TRAIN_METHOD`, `TEACHER_TOP_K` when nothing is set). */
export const SAMPLE_BUILDER_DEFAULTS = Object.freeze({ method: 'combined' as 'rl' | 'opd' | 'combined', topK: 0 });

/** The trajectory assembler's defaults (`TRAJECTORY_SETTLE_MS` when nothing is set). */
export const TRAJECTORY_ASSEMBLER_DEFAULTS = Object.freeze({ settleMs: 30_000 });

/** The group builder's defaults (`GRPO_*` when nothing is set). */
export const GROUP_BUILDER_DEFAULTS = Object.freeze({ normalizeStd: true, batchTimeoutMs: 300_000, retainDoneMs: 3_600_000 });

/**
 * The sink's defaults (`SINK_*` when nothing is set): replays are stored too, as `turnstream sink`
 * (and `up`) always did; a caller that wants the live topics only passes `replayTags: []`.
 */
export const SINK_DEFAULTS = Object.freeze({
  groupSuffix: 'turnstream-clickhouse-sink',
  replayTags: 'all' as readonly string[] | 'all',
  replayDiscoveryMs: 10_000,
  batchRows: 500,
  flushIntervalMs: 500,
  /** `maxBufferedRows` is this many batches. */
  bufferedBatches: 100,
  retryInitialMs: 250,
  retryMaxMs: 5000,
  stage: 'clickhouse-sink',
});
