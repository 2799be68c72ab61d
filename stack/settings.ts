/**
 * The settings of a whole turnstream stack, every service's, as one typed object: what `up`,
 * `gateway`, `train`, `process`, `sink`, eval, gym and bench build their services from (stack/).
 * cli/config.ts maps the environment and flags onto a partial of it (only what is set);
 * `resolveSettings` fills the rest from the modules' own DEFAULTS objects, so a default lives in
 * one place: beside the options of the module that uses it.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
// Each folder's defaults.ts: its DEFAULTS objects alone, so that reading the settings loads no service.
import { ANALYTICS_DEFAULTS } from '../warehouse/defaults.ts';
import { ADMISSION_DEFAULTS, GATEWAY_DEFAULTS, LLAMA_ENGINE_DEFAULTS, SSE_DEFAULTS, type LlamaBatching } from '../gateway/defaults.ts';
import {
  GROUP_BUILDER_DEFAULTS,
  JUDGE_DEFAULTS,
  SAMPLE_BUILDER_DEFAULTS,
  SESSION_ASSEMBLER_DEFAULTS,
  SINK_DEFAULTS,
  TRAJECTORY_ASSEMBLER_DEFAULTS,
} from '../processors/defaults.ts';
import { LEARNER_DEFAULTS } from '../trainer/defaults.ts';
import type { LearnerSettings } from '../trainer/index.ts';
import type { Secret, TlsOptions } from '../core/index.ts';
import type { ConnectionSecurity } from '../streams/index.ts';

/** The settings of no one service: where things are, the model, logging, the training backend. */
export const STACK_DEFAULTS = Object.freeze({
  /** Under the working folder. */
  home: '.turnstream',
  model: 'smollm2-135m',
  hfEndpoint: 'https://huggingface.co',
  logLevel: 'info',
  /** 50 MiB. */
  logMaxBytes: 50 * 1024 * 1024,
  logKeep: 3,
  topicPrefix: '',
  tfjsBackend: 'auto' as TfjsSettings['backend'],
  tfjsGpu: 'auto' as TfjsSettings['gpu'],
  /** Gateways share the trainer's weight store. */
  weightsTransport: 'file' as 'file' | 'kafka',
});

/** The gateway service (`turnstream gateway`). */
export interface GatewaySettings {
  /** Listen port; 0 = any free port. `PORT` @default GATEWAY_DEFAULTS.port (30000) */
  port: number;
  /** `key` or `key:userId`, comma separated; empty = no auth. `TURNSTREAM_API_KEYS` @default [] */
  apiKeys: string[];
  /** Turn type assumed when a request says none. `DEFAULT_TURN_TYPE` (main|side) @default GATEWAY_DEFAULTS.defaultTurnType ('main') */
  defaultTurnType: 'main' | 'side';
  /** Largest request body in bytes. `GATEWAY_BODY_LIMIT_BYTES` @default GATEWAY_DEFAULTS.bodyLimitBytes (4 MiB) */
  bodyLimitBytes: number;
  /** Bound on one generation (504 after it). `GATEWAY_GENERATION_TIMEOUT_MS` @default GATEWAY_DEFAULTS.generationTimeoutMs (300000) */
  generationTimeoutMs: number;
  /** Share session inference and feedback by turn id across gateway instances (follow the turns topic). `GATEWAY_SHARE_SESSIONS` @default GATEWAY_DEFAULTS.shareSessions (true) */
  shareSessions: boolean;
  /** How far back a starting gateway learns turns, ms. `GATEWAY_SESSION_SHARE_WINDOW_MS` @default GATEWAY_DEFAULTS.sessionShareWindowMs (1800000) */
  sessionShareWindowMs: number;
  /** Keys that may act for any user (`key` or `key:name`), comma separated. `TURNSTREAM_SERVICE_KEYS` @default [] */
  serviceKeys: string[];
  /** Generations running at once. `GATEWAY_MAX_CONCURRENT_GENERATIONS` @default ADMISSION_DEFAULTS.maxConcurrent (8) */
  maxConcurrentGenerations: number;
  /** Requests waiting for a generation slot (429 beyond). `GATEWAY_MAX_QUEUED_GENERATIONS` @default ADMISSION_DEFAULTS.maxQueue (64) */
  maxQueuedGenerations: number;
  /** Longest wait for a slot before 429, ms. `GATEWAY_QUEUE_TIMEOUT_MS` @default ADMISSION_DEFAULTS.queueTimeoutMs (30000) */
  queueTimeoutMs: number;
  /** A streaming client that reads nothing for this long is cut, ms. `GATEWAY_STREAM_STALL_TIMEOUT_MS` @default SSE_DEFAULTS.stallTimeoutMs (30000) */
  streamStallTimeoutMs: number;
  /** Bytes one streaming client may leave unread before it is cut. `GATEWAY_STREAM_BUFFER_BYTES` @default SSE_DEFAULTS.maxBufferedBytes (1048576) */
  streamBufferBytes: number;
  /** `/readyz` is not ready above this outbox depth. `GATEWAY_OUTBOX_READY_MAX_DEPTH` @default GATEWAY_DEFAULTS.outboxReadyMaxDepth (10000) */
  outboxReadyMaxDepth: number;
  /** `/readyz` is not ready while the outbox has drained nothing for this long, ms. `GATEWAY_OUTBOX_STALL_MS` @default GATEWAY_DEFAULTS.outboxStallMs (60000) */
  outboxStallMs: number;
  /**
   * Longest wait for a turn's fsync'd outbox append before the call is answered anyway, ms. A
   * turn answered past it is lost if the gateway dies before the append lands.
   * `GATEWAY_CAPTURE_WAIT_MS` @default GATEWAY_DEFAULTS.captureBoundMs (1000)
   */
  captureWaitMs: number;
}

/** An upstream OpenAI-compatible engine the gateway proxies to instead of the built-in model. */
export interface UpstreamSettings {
  /** Unset = the built-in tfjs policy. `UPSTREAM_BASE_URL` @default undefined */
  baseUrl: string | undefined;
  /** `UPSTREAM_API_KEY` @default undefined */
  apiKey: string | undefined;
  /** `UPSTREAM_MODEL` @default undefined */
  model: string | undefined;
}

/** Which model is served and trained, and where models are fetched to (`--model`, `turnstream model`). */
export interface ModelSettings {
  /**
   * `builtin` (the tiny tfjs model), a catalog name (`turnstream model list`), a path to a `.gguf`
   * file, or `hf:ORG/REPO/FILE.gguf[@REVISION]`. `TURNSTREAM_MODEL` @default STACK_DEFAULTS.model ('smollm2-135m')
   */
  spec: string;
  /** The models cache. `TURNSTREAM_MODELS_DIR` @default <home>/models */
  cacheDir: string;
  /** Hugging Face hub base URL (a mirror). `HF_ENDPOINT` @default STACK_DEFAULTS.hfEndpoint ('https://huggingface.co') */
  hfEndpoint: string;
  /** Hugging Face token, for gated or private models. `HF_TOKEN` @default undefined */
  hfToken: string | undefined;
}

/** How the gateway serves a GGUF model on llama.cpp (`TURNSTREAM_MODEL` other than `builtin`). */
export interface LlamaServeSettings {
  /** Tokens per sequence. `LLAMA_CONTEXT_SIZE` @default undefined = the model's training context, at most LLAMA_ENGINE_DEFAULTS.maxContextSize (8192) */
  contextSize: number | undefined;
  /** Generations at once (llama.cpp sequences of each version). `LLAMA_PARALLEL` @default LLAMA_ENGINE_DEFAULTS.parallel (2) */
  parallel: number;
  /**
   * `separate`: a context of one sequence per generation; `shared`: one context decoding them as one
   * batch, which changed answers on the CPU (gateway/defaults.ts). `LLAMA_BATCHING` @default LLAMA_ENGINE_DEFAULTS.batching ('separate')
   */
  batching: LlamaBatching;
  /** CPU threads of llama.cpp, all of a version's contexts together. `LLAMA_THREADS` @default undefined = half the cores, at least 1 */
  threads: number | undefined;
  /** temperature when a request gives none. `LLAMA_TEMPERATURE` @default LLAMA_ENGINE_DEFAULTS.temperature (0.3) */
  temperature: number;
  /** top_p when a request gives none. `LLAMA_TOP_P` @default LLAMA_ENGINE_DEFAULTS.topP (0.9) */
  topP: number;
  /** max_tokens when a request gives none. `LLAMA_MAX_TOKENS` @default LLAMA_ENGINE_DEFAULTS.defaultMaxTokens (512) */
  maxTokens: number;
  /** System prompt of conversations without one. `TURNSTREAM_SYSTEM_PROMPT` @default undefined = the catalog's suggestion, else the template's own */
  systemPrompt: string | undefined;
  /** `auto` uses a GPU build of llama.cpp when one loads; `off` forces the CPU. `LLAMA_GPU` @default LLAMA_ENGINE_DEFAULTS.gpu ('auto') */
  gpu: 'auto' | 'off';
}

/** The tfjs backend of everything that trains or scores (trainer, teacher, eval, bench). */
export interface TfjsSettings {
  /**
   * `auto`: native TensorFlow (built from PyPI's wheel on first use; the GPU build when a CUDA
   * device is present), else wasm, else cpu. A backend named is tried first. `TFJS_BACKEND`
   * (auto|tensorflow-gpu|tensorflow|wasm|cpu) @default STACK_DEFAULTS.tfjsBackend ('auto')
   */
  backend: 'auto' | 'tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu';
  /**
   * Cache of the built TensorFlow bindings, one per version set, shared by every checkout and
   * TURNSTREAM_HOME of this user (a build is ~600 MB). `TURNSTREAM_NATIVE_DIR`
   * @default $XDG_CACHE_HOME/turnstream/native, else ~/.cache/turnstream/native
   */
  nativeDir: string;
  /** `off` never uses the GPU build, even with a CUDA device. `TFJS_GPU` @default STACK_DEFAULTS.tfjsGpu ('auto') */
  gpu: 'auto' | 'off';
}

/** Learning from tasks (`turnstream gym`): the trajectory assembler and the group builder. */
export interface GrpoSettings {
  /** How long a rollout's outcome waits for the turns it lists, ms. `TRAJECTORY_SETTLE_MS` @default TRAJECTORY_ASSEMBLER_DEFAULTS.settleMs (30000) */
  settleMs: number;
  /** Divide group advantages by the group's standard deviation (GRPO); off: r − mean. `GRPO_NORMALIZE_STD` @default GROUP_BUILDER_DEFAULTS.normalizeStd (true) */
  normalizeStd: boolean;
  /** A rollout batch still missing trajectories this long after its first trains on what it has, ms. `GRPO_BATCH_TIMEOUT_MS` @default GROUP_BUILDER_DEFAULTS.batchTimeoutMs (300000) */
  batchTimeoutMs: number;
}

/** What every stream processor shares (`turnstream process …`). */
export interface ProcessorSettings {
  /** Records in flight per instance before its partitions pause. `PROCESSOR_CONCURRENCY` @default undefined = the runtime's: 64 per record, 4096 for a batch handler */
  concurrency: number | undefined;
  /**
   * How soon a dead instance's partitions move to the others (the consumer group session
   * timeout). `PROCESSOR_SESSION_TIMEOUT_MS` @default undefined = PROCESSOR_DEFAULTS.sessionTimeoutMs (30000)
   */
  sessionTimeoutMs: number | undefined;
}

/** The session assembler. */
export interface SessionSettings {
  /** A session with no turn for this long is closed. `SESSION_IDLE_TIMEOUT_MS` @default SESSION_ASSEMBLER_DEFAULTS.idleTimeoutMs (30 min) */
  idleTimeoutMs: number;
  /** The last turn of a closed session: a masked sample or none. `SESSION_END_POLICY` (masked|drop) @default SESSION_ASSEMBLER_DEFAULTS.endPolicy ('masked') */
  endPolicy: 'masked' | 'drop';
  /**
   * How long, in stream time, a ready pair waits for a late 👍/👎. `FEEDBACK_GRACE_MS`
   * @default SESSION_ASSEMBLER_DEFAULTS.feedbackGraceMs (5000)
   */
  feedbackGraceMs: number;
}

/** The judge (also the live defaults of `turnstream replay`). */
export interface JudgeSettings {
  /** OpenAI-compatible judge endpoint; unset = the embedded judge. `JUDGE_BASE_URL` @default undefined */
  baseUrl: string | undefined;
  /** `JUDGE_MODEL` @default JUDGE_DEFAULTS.model ('judge') */
  model: string;
  /** `JUDGE_API_KEY` @default undefined */
  apiKey: string | undefined;
  /** Process-reward votes per pair. `JUDGE_VOTES` @default JUDGE_DEFAULTS.votes (3) */
  votes: number;
  /** Hint votes per pair (OPD and combined). `JUDGE_HINT_VOTES` @default JUDGE_DEFAULTS.hintVotes (1) */
  hintVotes: number;
  /** Bound on one judge call. `JUDGE_TIMEOUT_MS` @default JUDGE_DEFAULTS.timeoutMs (60000) */
  timeoutMs: number;
}

/** The teacher of the sample builder (OPD and combined). */
export interface TeacherSettings {
  /**
   * An engine that scores given tokens. `TEACHER_BASE_URL`
   * @default undefined = the upstream engine when one is set, else the built-in base checkpoint
   */
  baseUrl: string | undefined;
  /** `TEACHER_MODEL` @default undefined = `UPSTREAM_MODEL`, else 'teacher' */
  model: string | undefined;
  /** `TEACHER_API_KEY` @default undefined = `UPSTREAM_API_KEY` when the upstream engine is the teacher */
  apiKey: string | undefined;
  /** Teacher top-k log-probs per position; 0 = none. `TEACHER_TOP_K` @default SAMPLE_BUILDER_DEFAULTS.topK (0) */
  topK: number;
}

/** Where analytics lives in ClickHouse (sink, report, dashboard). The URL is `clickhouseUrl`. */
export interface ClickhouseSettings {
  /** `CLICKHOUSE_DATABASE` @default ANALYTICS_DEFAULTS.database ('turnstream') */
  database: string;
  /** `CLICKHOUSE_USER` @default undefined = ClickHouse's default user */
  username: string | undefined;
  /** `CLICKHOUSE_PASSWORD`, or read from the file `CLICKHOUSE_PASSWORD_FILE` names. @default undefined */
  password: Secret | undefined;
  /** The CA ClickHouse's https certificate is checked against. `CLICKHOUSE_CA_FILE` @default undefined = Node's roots */
  tls: TlsOptions | undefined;
  /** Prefix of every table. `CLICKHOUSE_TABLE_PREFIX` @default ANALYTICS_DEFAULTS.tablePrefix ('') */
  tablePrefix: string;
}

/** The ClickHouse sink (`turnstream sink`). */
export interface SinkSettings {
  /**
   * Consumer group. `SINK_GROUP_ID` @default `<topicPrefix>` + SINK_DEFAULTS.groupSuffix
   * ('turnstream-clickhouse-sink'); undefined: the sink's own default for its topic family
   */
  groupId: string | undefined;
  /** Rows per insert. `SINK_BATCH_ROWS` @default SINK_DEFAULTS.batchRows (500) */
  batchRows: number;
  /** Buffered rows at which reading waits for inserts. `SINK_MAX_BUFFERED_ROWS` @default undefined = SINK_DEFAULTS.bufferedBatches (100) × batchRows */
  maxBufferedRows: number | undefined;
  /** A partial batch is inserted after this long. `SINK_FLUSH_MS` @default SINK_DEFAULTS.flushIntervalMs (500) */
  flushMs: number;
  /**
   * Replays to store too (`turnstream.replay.<tag>.*` topics, each row under its tag): `all`,
   * `none`, or tags separated by commas. `SINK_REPLAY_TAGS` @default SINK_DEFAULTS.replayTags ('all')
   */
  replayTags: readonly string[] | 'all';
  /** With `all`: how often to look for new replay tags, ms; 0 = only at start. `SINK_REPLAY_DISCOVERY_MS` @default SINK_DEFAULTS.replayDiscoveryMs (10000) */
  replayDiscoveryMs: number;
}

/** The settings the model family decides unless they are set (LEARNER_FAMILY_DEFAULTS). */
export type FamilySettingKey =
  'minSamples' | 'lr' | 'maxKl' | 'klCoef' | 'rewardBaseline' | 'rewardBaselinePrior' | 'opdAdvantage' | 'pleasedDamping';

/**
 * The learner (`turnstream train`; its flags override these): trainer/learner-settings.ts's
 * LearnerSettings, those the model family decides left undefined until the model is known
 * (stack/learner-service.ts), and the learner service's metrics port.
 */
export type TrainSettings = Omit<LearnerSettings, FamilySettingKey> &
  Partial<Pick<LearnerSettings, FamilySettingKey>> & {
    /** Port of the learner's Prometheus `/metrics`; 0 = off. `TRAINER_METRICS_PORT` @default 0 */
    metricsPort: number;
  };

export interface StackSettings {
  /** Kafka bootstrap servers; when unset the local stack is started. `KAFKA_BROKERS` */
  kafkaBrokers: string | undefined;
  /** Confluent-compatible registry URL. `SCHEMA_REGISTRY_URL` */
  schemaRegistryUrl: string | undefined;
  /** ClickHouse HTTP URL. `CLICKHOUSE_URL` */
  clickhouseUrl: string | undefined;
  /**
   * How every service reaches a secured Kafka (`KAFKA_SECURITY_PROTOCOL`, `KAFKA_SASL_*`,
   * `KAFKA_TLS_CA_FILE`) and registry (`SCHEMA_REGISTRY_USERNAME`, `SCHEMA_REGISTRY_PASSWORD[_FILE]`,
   * `SCHEMA_REGISTRY_CA_FILE`); ClickHouse's is in `clickhouse`. @default plaintext, no login
   */
  security: ConnectionSecurity;
  /** Folder of the local stack's downloads, data and logs. `TURNSTREAM_HOME` @default STACK_DEFAULTS.home ('.turnstream', from the working folder) */
  home: string;
  /** Java of the local stack's Kafka and registry. `JAVA_HOME` @default undefined = `java` on the PATH */
  javaHome: string | undefined;
  /** Address every service listens on (gateway, dashboard, trainer metrics). `HOST` @default GATEWAY_DEFAULTS.host ('127.0.0.1') */
  host: string;
  /** Weight store folder. `TURNSTREAM_WEIGHTS_DIR` @default <home>/weights */
  weightsDir: string;
  /**
   * How the trainer hands its versions to the gateways: `file` (they share the weight store) or
   * `kafka` (the files travel on `turnstream.weight-blobs.v1`, for gateways with homes of their own).
   * `TURNSTREAM_WEIGHTS_TRANSPORT` @default STACK_DEFAULTS.weightsTransport ('file')
   */
  weightsTransport: 'file' | 'kafka';
  /** Model id of the built-in policy and the learner. `TURNSTREAM_MODEL_ID` @default undefined = 'turnstream-tiny' */
  modelId: string | undefined;
  /** Training method of the judge and the sample builder. `TRAIN_METHOD` (rl|opd|combined) @default SAMPLE_BUILDER_DEFAULTS.method ('combined') */
  trainMethod: 'rl' | 'opd' | 'combined';
  /** pino level. `LOG_LEVEL` (fatal|error|warn|info|debug|trace|silent) @default STACK_DEFAULTS.logLevel ('info') */
  logLevel: string;
  /** Size at which `turnstream up` rotates a service's log. `TURNSTREAM_LOG_MAX_BYTES` @default STACK_DEFAULTS.logMaxBytes (50 MiB) */
  logMaxBytes: number;
  /** Rotated logs `turnstream up` keeps per service. `TURNSTREAM_LOG_KEEP` @default STACK_DEFAULTS.logKeep (3) */
  logKeep: number;
  /** Topic name prefix (tests isolate themselves with it). `TURNSTREAM_TOPIC_PREFIX` @default STACK_DEFAULTS.topicPrefix ('') */
  topicPrefix: string;
  model: ModelSettings;
  /** Key the `/metrics` endpoints (gateway, trainer, dashboard) require. `TURNSTREAM_METRICS_KEY` @default undefined = an API key when keys are on, else open */
  metricsKey: string | undefined;
  /** Key the dashboard requires (besides the API keys). `TURNSTREAM_DASHBOARD_KEY` @default undefined = any API key when keys are on, else open */
  dashboardKey: string | undefined;
  llama: LlamaServeSettings;
  tfjs: TfjsSettings;
  gateway: GatewaySettings;
  upstream: UpstreamSettings;
  processor: ProcessorSettings;
  session: SessionSettings;
  grpo: GrpoSettings;
  judge: JudgeSettings;
  teacher: TeacherSettings;
  clickhouse: ClickhouseSettings;
  sink: SinkSettings;
  train: TrainSettings;
}

/** A partial of {@link StackSettings}: each value and each section's values optional (what cli/config.ts reads). */
export type StackSettingsInput = {
  [K in keyof StackSettings]?: StackSettings[K] extends readonly unknown[]
    ? StackSettings[K]
    : StackSettings[K] extends object | undefined
      ? Partial<NonNullable<StackSettings[K]>>
      : StackSettings[K];
};

/** `given`'s defined fields over `defaults`. */
function over<T extends object>(defaults: T, given: Partial<T> | undefined): T {
  const out = { ...defaults };
  for (const [k, v] of Object.entries(given ?? {})) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/**
 * The settings with every default filled in from the modules' DEFAULTS: relative folders resolve
 * against `cwd`; the weights and models folders default to under `home`.
 */
export function resolveSettings(input: StackSettingsInput = {}, cwd = process.cwd()): StackSettings {
  const home = resolve(cwd, input.home ?? STACK_DEFAULTS.home);
  const topicPrefix = input.topicPrefix ?? STACK_DEFAULTS.topicPrefix;
  return {
    kafkaBrokers: input.kafkaBrokers,
    schemaRegistryUrl: input.schemaRegistryUrl,
    clickhouseUrl: input.clickhouseUrl,
    security: { kafka: input.security?.kafka, registry: input.security?.registry },
    home,
    javaHome: input.javaHome,
    host: input.host ?? GATEWAY_DEFAULTS.host,
    weightsDir: resolve(cwd, input.weightsDir ?? resolve(home, 'weights')),
    weightsTransport: input.weightsTransport ?? STACK_DEFAULTS.weightsTransport,
    modelId: input.modelId,
    trainMethod: input.trainMethod ?? SAMPLE_BUILDER_DEFAULTS.method,
    logLevel: input.logLevel ?? STACK_DEFAULTS.logLevel,
    logMaxBytes: input.logMaxBytes ?? STACK_DEFAULTS.logMaxBytes,
    logKeep: input.logKeep ?? STACK_DEFAULTS.logKeep,
    topicPrefix,
    model: {
      spec: input.model?.spec ?? STACK_DEFAULTS.model,
      cacheDir: resolve(cwd, input.model?.cacheDir ?? resolve(home, 'models')),
      hfEndpoint: input.model?.hfEndpoint ?? STACK_DEFAULTS.hfEndpoint,
      hfToken: input.model?.hfToken,
    },
    metricsKey: input.metricsKey,
    dashboardKey: input.dashboardKey,
    llama: over<LlamaServeSettings>(
      {
        contextSize: undefined,
        parallel: LLAMA_ENGINE_DEFAULTS.parallel,
        batching: LLAMA_ENGINE_DEFAULTS.batching,
        threads: undefined,
        temperature: LLAMA_ENGINE_DEFAULTS.temperature,
        topP: LLAMA_ENGINE_DEFAULTS.topP,
        maxTokens: LLAMA_ENGINE_DEFAULTS.defaultMaxTokens,
        systemPrompt: undefined,
        gpu: LLAMA_ENGINE_DEFAULTS.gpu === false ? 'off' : 'auto',
      },
      input.llama,
    ),
    tfjs: {
      backend: input.tfjs?.backend ?? STACK_DEFAULTS.tfjsBackend,
      nativeDir: resolve(cwd, input.tfjs?.nativeDir ?? join(homedir(), '.cache', 'turnstream', 'native')),
      gpu: input.tfjs?.gpu ?? STACK_DEFAULTS.tfjsGpu,
    },
    gateway: over<GatewaySettings>(
      {
        port: GATEWAY_DEFAULTS.port,
        apiKeys: [],
        serviceKeys: [],
        defaultTurnType: GATEWAY_DEFAULTS.defaultTurnType,
        bodyLimitBytes: GATEWAY_DEFAULTS.bodyLimitBytes,
        generationTimeoutMs: GATEWAY_DEFAULTS.generationTimeoutMs,
        shareSessions: GATEWAY_DEFAULTS.shareSessions,
        sessionShareWindowMs: GATEWAY_DEFAULTS.sessionShareWindowMs,
        maxConcurrentGenerations: ADMISSION_DEFAULTS.maxConcurrent,
        maxQueuedGenerations: ADMISSION_DEFAULTS.maxQueue,
        queueTimeoutMs: ADMISSION_DEFAULTS.queueTimeoutMs,
        streamStallTimeoutMs: SSE_DEFAULTS.stallTimeoutMs,
        streamBufferBytes: SSE_DEFAULTS.maxBufferedBytes,
        outboxReadyMaxDepth: GATEWAY_DEFAULTS.outboxReadyMaxDepth,
        outboxStallMs: GATEWAY_DEFAULTS.outboxStallMs,
        captureWaitMs: GATEWAY_DEFAULTS.captureBoundMs,
      },
      input.gateway,
    ),
    upstream: over<UpstreamSettings>({ baseUrl: undefined, apiKey: undefined, model: undefined }, input.upstream),
    processor: over<ProcessorSettings>({ concurrency: undefined, sessionTimeoutMs: undefined }, input.processor),
    session: over<SessionSettings>(
      {
        idleTimeoutMs: SESSION_ASSEMBLER_DEFAULTS.idleTimeoutMs,
        endPolicy: SESSION_ASSEMBLER_DEFAULTS.endPolicy,
        feedbackGraceMs: SESSION_ASSEMBLER_DEFAULTS.feedbackGraceMs,
      },
      input.session,
    ),
    grpo: over<GrpoSettings>(
      {
        settleMs: TRAJECTORY_ASSEMBLER_DEFAULTS.settleMs,
        normalizeStd: GROUP_BUILDER_DEFAULTS.normalizeStd,
        batchTimeoutMs: GROUP_BUILDER_DEFAULTS.batchTimeoutMs,
      },
      input.grpo,
    ),
    judge: over<JudgeSettings>(
      {
        baseUrl: undefined,
        model: JUDGE_DEFAULTS.model,
        apiKey: undefined,
        votes: JUDGE_DEFAULTS.votes,
        hintVotes: JUDGE_DEFAULTS.hintVotes,
        timeoutMs: JUDGE_DEFAULTS.timeoutMs,
      },
      input.judge,
    ),
    teacher: over<TeacherSettings>(
      { baseUrl: undefined, model: undefined, apiKey: undefined, topK: SAMPLE_BUILDER_DEFAULTS.topK },
      input.teacher,
    ),
    clickhouse: over<ClickhouseSettings>(
      {
        database: ANALYTICS_DEFAULTS.database,
        username: undefined,
        password: undefined,
        tls: undefined,
        tablePrefix: ANALYTICS_DEFAULTS.tablePrefix,
      },
      input.clickhouse,
    ),
    sink: over<SinkSettings>(
      {
        groupId: `${topicPrefix}${SINK_DEFAULTS.groupSuffix}`,
        batchRows: SINK_DEFAULTS.batchRows,
        maxBufferedRows: undefined,
        flushMs: SINK_DEFAULTS.flushIntervalMs,
        replayTags: SINK_DEFAULTS.replayTags,
        replayDiscoveryMs: SINK_DEFAULTS.replayDiscoveryMs,
      },
      input.sink,
    ),
    train: over<TrainSettings>(
      {
        ...LEARNER_DEFAULTS,
        loraTargets: [...LEARNER_DEFAULTS.loraTargets],
        // Left to the model family (trainer/learner-settings.ts LEARNER_FAMILY_DEFAULTS) unless set.
        lr: undefined,
        minSamples: undefined,
        maxKl: undefined,
        klCoef: undefined,
        rewardBaseline: undefined,
        rewardBaselinePrior: undefined,
        pleasedDamping: undefined,
        opdAdvantage: undefined,
        metricsPort: 0,
      },
      input.train,
    ),
  };
}
