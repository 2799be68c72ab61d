/** Options of `createGateway`. The CLI builds them from `loadConfig()`; tests pass them directly. */
import type { Logger } from '../core/index.ts';
import type { ModelConfig } from '../policy/index.ts';
import type { AdmissionOptions } from './admission.ts';
import type { BodyDrainLimits } from './body-drain.ts';
import type { SseLimits } from './sse-writer.ts';
import type { PolicyLoader } from './policy-registry.ts';
import type { KafkaLinkOptions } from './event-sink.ts';
import type { LlamaEngineOptions } from './llama-engine.ts';
import type { ProxyEngineOptions } from './proxy-engine.ts';

export { GATEWAY_DEFAULTS } from './defaults.ts';

export interface BuiltinOptions {
  /** Weight store root (`TURNSTREAM_WEIGHTS_DIR`). */
  weightsDir: string;
  /** @default 'turnstream-tiny' */
  modelId?: string;
  /** Create version 0 (random init) when the store has no version of the model. @default true */
  initIfEmpty?: boolean;
  /** Shape of that version 0. @default the trainer's DEFAULT_MODEL_CONFIG */
  initConfig?: Partial<Omit<ModelConfig, 'vocabSize'>>;
  /** Follow `turnstream.weights.v1` and hot-swap new versions (needs `kafka`). @default true */
  followWeights?: boolean;
  /** max_tokens when a request gives none. @default 128 */
  defaultMaxTokens?: number;
  /** Prompt budget in tokens. @default the policy's (three quarters of the context length) */
  maxPromptTokens?: number;
  /** Replaces trainer's `loadPolicy` (tests). @default loadPolicy */
  load?: PolicyLoader;
}

export interface GatewayOptions {
  /** `PORT` @default GATEWAY_DEFAULTS.port (30000) */
  port?: number;
  /** `HOST` @default GATEWAY_DEFAULTS.host ('127.0.0.1') */
  host?: string;
  /** turnstream home; the outbox lives in `<home>/outbox` unless `outboxDir` is given. */
  home: string;
  /** @default `<home>/outbox` */
  outboxDir?: string;
  /** This instance's id, recorded in every Turn. @default `gw-<hostname>-<pid>` */
  gatewayId?: string;
  /** Kafka and registry; without it turns only accumulate in the outbox. */
  kafka?: KafkaLinkOptions;
  /** The built-in tfjs policy; used when neither `llama` nor `upstream` is given. */
  builtin?: BuiltinOptions;
  /** A GGUF model on llama.cpp with LoRA versions (the default of `turnstream up`). */
  llama?: Omit<LlamaEngineOptions, 'logger' | 'onSwap'>;
  /** Proxy mode: an upstream OpenAI-compatible engine (`UPSTREAM_BASE_URL`). */
  upstream?: ProxyEngineOptions;
  /** `key` or `key:userId` entries; empty = auth off (`TURNSTREAM_API_KEYS`). @default [] */
  apiKeys?: string[];
  /**
   * Keys that may act for any user (`X-User-Id` / `user`), `key` or `key:name`; the name is
   * recorded as `actedBy` (`TURNSTREAM_SERVICE_KEYS`). They turn auth on too. @default []
   */
  serviceKeys?: string[];
  /** Key that `/metrics` requires (`TURNSTREAM_METRICS_KEY`). @default none: an API key when keys are on, else open */
  metricsKey?: string;
  /** Bounds on concurrent generations and their queue (429 beyond). @default see AdmissionOptions */
  admission?: Omit<AdmissionOptions, 'onChange'>;
  /** Bounds on what slow streaming clients hold. @default see SseLimits */
  streams?: SseLimits;
  /** Largest encoded Turn; a larger one is shrunk to fit (gateway/turn-fit.ts). @default the turns topic's max.message.bytes less 16 KiB */
  maxTurnBytes?: number;
  /** `/readyz` is not ready while the outbox holds more records than this. `GATEWAY_OUTBOX_READY_MAX_DEPTH` @default GATEWAY_DEFAULTS.outboxReadyMaxDepth (10000) */
  outboxReadyMaxDepth?: number;
  /** `/readyz` is not ready while the outbox holds records and drained none for this long, ms. `GATEWAY_OUTBOX_STALL_MS` @default GATEWAY_DEFAULTS.outboxStallMs (60000) */
  outboxStallMs?: number;
  /** Turn type when a call names none. `DEFAULT_TURN_TYPE` @default GATEWAY_DEFAULTS.defaultTurnType ('main') */
  defaultTurnType?: 'main' | 'side';
  /** Largest request body. `GATEWAY_BODY_LIMIT_BYTES` @default GATEWAY_DEFAULTS.bodyLimitBytes (4 MiB) */
  bodyLimitBytes?: number;
  /**
   * A refused body (over `bodyLimitBytes`) is read and discarded after the 413 so that the answer
   * reaches a client still sending; past these bounds its connection is destroyed. @default 4 GiB, 120 s
   */
  bodyDrain?: BodyDrainLimits;
  /** Bound on one generation; the request fails with 504 after it. `GATEWAY_GENERATION_TIMEOUT_MS` @default GATEWAY_DEFAULTS.generationTimeoutMs (300000) */
  generationTimeoutMs?: number;
  /** Largest accepted max_tokens / max_completion_tokens. @default GATEWAY_DEFAULTS.maxTokensLimit (262144) */
  maxTokensLimit?: number;
  /**
   * Longest wait for the turn's outbox append before answering: a hung disk stalls no chat beyond
   * it, and a turn answered past it is lost if the gateway dies before the append lands (200 ms
   * was passed under CPU load, and a kill -9 then lost an answered turn). `GATEWAY_CAPTURE_WAIT_MS`
   * @default GATEWAY_DEFAULTS.captureBoundMs (1000)
   */
  captureBoundMs?: number;
  /**
   * Record every call as a Turn event. Off, the gateway only serves (nothing to learn from, and
   * `/v1/feedback` answers 503); `turnstream bench gateway` measures what capture costs. @default true
   */
  capture?: boolean;
  /** Turns remembered for session inference (LRU). @default GATEWAY_DEFAULTS.sessionIndexSize (10000) */
  sessionIndexSize?: number;
  /**
   * Session inference and feedback by turn id across gateway instances: follow the turns topic
   * and remember every instance's turns, not only this one's (needs `kafka`). `GATEWAY_SHARE_SESSIONS`
   * @default GATEWAY_DEFAULTS.shareSessions (true)
   */
  shareSessions?: boolean;
  /** With `shareSessions`: on start, learn the turns of this last stretch of time, ms. `GATEWAY_SESSION_SHARE_WINDOW_MS` @default GATEWAY_DEFAULTS.sessionShareWindowMs (30 min) */
  sessionShareWindowMs?: number;
  /** How long `stop()` lets in-flight requests finish before aborting them. @default GATEWAY_DEFAULTS.stopGraceMs (10000) */
  stopGraceMs?: number;
  /** How long `stop()` tries to drain the outbox before leaving the rest on disk. @default GATEWAY_DEFAULTS.drainOnStopMs (5000) */
  drainOnStopMs?: number;
  /** @default a pino logger named 'gateway' at `logLevel` */
  logger?: Logger;
  /** @default 'info' */
  logLevel?: string;
}
