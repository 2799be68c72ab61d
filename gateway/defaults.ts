/**
 * The gateway's defaults: what `turnstream gateway` (and `up`) serve with when nothing is set, and
 * what `createGateway`, admission, the streams and the llama.cpp engine fall back to for an option
 * left out. A file that imports nothing, so that reading the configuration (cli/config.ts, through
 * stack/settings.ts) does not load the gateway.
 */
export const GATEWAY_DEFAULTS = Object.freeze({
  port: 30000,
  host: '127.0.0.1',
  defaultTurnType: 'main' as 'main' | 'side',
  bodyLimitBytes: 4 * 1024 * 1024,
  generationTimeoutMs: 300_000,
  maxTokensLimit: 262_144,
  captureBoundMs: 1000,
  outboxReadyMaxDepth: 10_000,
  outboxStallMs: 60_000,
  sessionIndexSize: 10_000,
  shareSessions: true,
  sessionShareWindowMs: 30 * 60 * 1000,
  stopGraceMs: 10_000,
  drainOnStopMs: 5000,
});

/** Admission's defaults (`turnstream gateway`'s when nothing is set). */
export const ADMISSION_DEFAULTS = Object.freeze({ maxConcurrent: 8, maxQueue: 64, queueTimeoutMs: 30_000 });

/** The streams' defaults (`turnstream gateway`'s when nothing is set). */
export const SSE_DEFAULTS = Object.freeze({
  stallTimeoutMs: 30_000,
  maxBufferedBytes: 1024 * 1024,
  maxTotalBufferedBytes: 64 * 1024 * 1024,
  keepAliveMs: 15_000,
});

/**
 * How a version's generations at once are laid out in llama.cpp: `separate`, a context of one
 * sequence each; `shared`, one context whose sequences are decoded in one batch. On this CPU
 * build (node-llama-cpp 3.21.1) a shared batch changes what each sequence computes: the greedy
 * answers of 32 prompts, 32 at a time, differed from the same prompts decoded alone in 31 of 32
 * (text of other prompts leaking in), 16 of 16 at 8 at a time, and the gym's engine-vs-trainer
 * mismatch at 32 was 0.8–1.7 nats (0.06 at 8); separate contexts gave the same answers as alone,
 * and were 1.77× faster on 2 cores (`bench parallel`; docs/gym.md, "When the engine and the
 * trainer disagree").
 */
export type LlamaBatching = 'separate' | 'shared';

/**
 * The engine's defaults (`LLAMA_*` when nothing is set). temperature 0.3 is what `turnstream up`
 * served with (its configuration's default); the engine's own fallback was 0.7 until the two
 * became one. Eval and gym send their sampling with every request.
 */
export const LLAMA_ENGINE_DEFAULTS = Object.freeze({
  maxContextSize: 8192,
  parallel: 2,
  batching: 'separate' as LlamaBatching,
  temperature: 0.3,
  topP: 0.9,
  defaultMaxTokens: 512,
  maxPinned: 2,
  gpu: 'auto' as 'auto' | false,
});
