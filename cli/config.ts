/**
 * The one place that reads the environment (and a `.env` file). Everything else receives
 * typed options. Every value has a default that works on one machine; a value that is not
 * allowed (not a number, out of range, not one of the choices) fails the start with one
 * TS_ERR_INVALID_INPUT error listing every bad variable, its value and what is allowed.
 */
import { config as loadDotenv } from 'dotenv';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ErrorCodes, readCaFile, readSecretFile, Secret, TurnstreamError, type TlsOptions } from '../core/index.ts';
import type { ConnectionSecurity } from '../streams/index.ts';
import { readConnectionSecurity } from './connection-settings.ts';

/** The gateway service (`turnstream gateway`). */
export interface GatewayConfig {
  /** Listen port; 0 = any free port. `PORT` @default 30000 */
  port: number;
  /** `key` or `key:userId`, comma separated; empty = no auth. `TURNSTREAM_API_KEYS` @default [] */
  apiKeys: string[];
  /** Turn type assumed when a request says none. `DEFAULT_TURN_TYPE` (main|side) @default 'main' */
  defaultTurnType: 'main' | 'side';
  /** Largest request body in bytes. `GATEWAY_BODY_LIMIT_BYTES` @default undefined = the gateway's 4 MiB */
  bodyLimitBytes: number | undefined;
  /** Bound on one generation (504 after it). `GATEWAY_GENERATION_TIMEOUT_MS` @default undefined = the gateway's 300000 */
  generationTimeoutMs: number | undefined;
  /** Share session inference and feedback by turn id across gateway instances (follow the turns topic). `GATEWAY_SHARE_SESSIONS` @default true */
  shareSessions: boolean;
  /** How far back a starting gateway learns turns, ms. `GATEWAY_SESSION_SHARE_WINDOW_MS` @default 1800000 */
  sessionShareWindowMs: number;
  /** Keys that may act for any user (`key` or `key:name`), comma separated. `TURNSTREAM_SERVICE_KEYS` @default [] */
  serviceKeys: string[];
  /** Generations running at once. `GATEWAY_MAX_CONCURRENT_GENERATIONS` @default 8 */
  maxConcurrentGenerations: number;
  /** Requests waiting for a generation slot (429 beyond). `GATEWAY_MAX_QUEUED_GENERATIONS` @default 64 */
  maxQueuedGenerations: number;
  /** Longest wait for a slot before 429, ms. `GATEWAY_QUEUE_TIMEOUT_MS` @default 30000 */
  queueTimeoutMs: number;
  /** A streaming client that reads nothing for this long is cut, ms. `GATEWAY_STREAM_STALL_TIMEOUT_MS` @default 30000 */
  streamStallTimeoutMs: number;
  /** Bytes one streaming client may leave unread before it is cut. `GATEWAY_STREAM_BUFFER_BYTES` @default 1048576 */
  streamBufferBytes: number;
  /** `/readyz` is not ready above this outbox depth. `GATEWAY_OUTBOX_READY_MAX_DEPTH` @default 10000 */
  outboxReadyMaxDepth: number;
  /** `/readyz` is not ready while the outbox has drained nothing for this long, ms. `GATEWAY_OUTBOX_STALL_MS` @default 60000 */
  outboxStallMs: number;
  /**
   * Longest wait for a turn's fsync'd outbox append before the call is answered anyway, ms. A
   * turn answered past it is lost if the gateway dies before the append lands.
   * `GATEWAY_CAPTURE_WAIT_MS` @default 1000
   */
  captureWaitMs: number;
}

/** An upstream OpenAI-compatible engine the gateway proxies to instead of the built-in model. */
export interface UpstreamConfig {
  /** Unset = the built-in tfjs policy. `UPSTREAM_BASE_URL` @default undefined */
  baseUrl: string | undefined;
  /** `UPSTREAM_API_KEY` @default undefined */
  apiKey: string | undefined;
  /** `UPSTREAM_MODEL` @default undefined */
  model: string | undefined;
}

/** Which model is served and trained, and where models are fetched to (`--model`, `turnstream model`). */
export interface ModelConfig {
  /**
   * `builtin` (the tiny tfjs model), a catalog name (`turnstream model list`), a path to a `.gguf`
   * file, or `hf:ORG/REPO/FILE.gguf[@REVISION]`. `TURNSTREAM_MODEL` @default 'smollm2-135m'
   */
  spec: string;
  /** The models cache. `TURNSTREAM_MODELS_DIR` @default <home>/models */
  cacheDir: string;
  /** Hugging Face hub base URL (a mirror). `HF_ENDPOINT` @default 'https://huggingface.co' */
  hfEndpoint: string;
  /** Hugging Face token, for gated or private models. `HF_TOKEN` @default undefined */
  hfToken: string | undefined;
}

/** How the gateway serves a GGUF model on llama.cpp (`TURNSTREAM_MODEL` other than `builtin`). */
export interface LlamaServeConfig {
  /** Tokens per sequence. `LLAMA_CONTEXT_SIZE` @default undefined = the model's training context, at most 8192 */
  contextSize: number | undefined;
  /** Generations at once (llama.cpp sequences per context). `LLAMA_PARALLEL` @default 2 */
  parallel: number;
  /** CPU threads of llama.cpp. `LLAMA_THREADS` @default undefined = half the cores, at least 1 */
  threads: number | undefined;
  /** temperature when a request gives none. `LLAMA_TEMPERATURE` @default 0.3 */
  temperature: number;
  /** top_p when a request gives none. `LLAMA_TOP_P` @default 0.9 */
  topP: number;
  /** max_tokens when a request gives none. `LLAMA_MAX_TOKENS` @default 512 */
  maxTokens: number;
  /** System prompt of conversations without one. `TURNSTREAM_SYSTEM_PROMPT` @default undefined = the catalog's suggestion, else the template's own */
  systemPrompt: string | undefined;
  /** `auto` uses a GPU build of llama.cpp when one loads; `off` forces the CPU. `LLAMA_GPU` @default 'auto' */
  gpu: 'auto' | 'off';
}

/** The tfjs backend of everything that trains or scores (trainer, teacher, eval, bench). */
export interface TfjsConfig {
  /**
   * `auto`: native TensorFlow (built from PyPI's wheel on first use; the GPU build when a CUDA
   * device is present), else wasm, else cpu. A backend named is tried first. `TFJS_BACKEND`
   * (auto|tensorflow-gpu|tensorflow|wasm|cpu) @default 'auto'
   */
  backend: 'auto' | 'tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu';
  /**
   * Cache of the built TensorFlow bindings, one per version set, shared by every checkout and
   * TURNSTREAM_HOME of this user (a build is ~600 MB). `TURNSTREAM_NATIVE_DIR`
   * @default $XDG_CACHE_HOME/turnstream/native, else ~/.cache/turnstream/native
   */
  nativeDir: string;
  /** `off` never uses the GPU build, even with a CUDA device. `TFJS_GPU` @default 'auto' */
  gpu: 'auto' | 'off';
}

/** Learning from tasks (`turnstream gym`): the trajectory assembler and the group builder. */
export interface GrpoConfig {
  /** How long a rollout's outcome waits for the turns it lists, ms. `TRAJECTORY_SETTLE_MS` @default 30000 */
  settleMs: number;
  /** Divide group advantages by the group's standard deviation (GRPO); off: r − mean. `GRPO_NORMALIZE_STD` @default true */
  normalizeStd: boolean;
  /** A rollout batch still missing trajectories this long after its first trains on what it has, ms. `GRPO_BATCH_TIMEOUT_MS` @default 300000 */
  batchTimeoutMs: number;
}

/** What every stream processor shares (`turnstream process …`). */
export interface ProcessorConfig {
  /** Records in flight per instance before its partitions pause. `PROCESSOR_CONCURRENCY` @default undefined = the runtime's: 64 per record, 4096 for a batch handler */
  concurrency: number | undefined;
  /**
   * How soon a dead instance's partitions move to the others (the consumer group session
   * timeout). `PROCESSOR_SESSION_TIMEOUT_MS` @default undefined = the processor's 30000
   */
  sessionTimeoutMs: number | undefined;
}

/** The session assembler. */
export interface SessionConfig {
  /** A session with no turn for this long is closed. `SESSION_IDLE_TIMEOUT_MS` @default 1_800_000 */
  idleTimeoutMs: number;
  /** The last turn of a closed session: a masked sample or none. `SESSION_END_POLICY` (masked|drop) @default 'masked' */
  endPolicy: 'masked' | 'drop';
  /**
   * How long, in stream time, a ready pair waits for a late 👍/👎. `FEEDBACK_GRACE_MS`
   * @default undefined = the assembler's DEFAULT_FEEDBACK_GRACE_MS (5000)
   */
  feedbackGraceMs: number | undefined;
}

/** The judge (also the live defaults of `turnstream replay`). */
export interface JudgeConfig {
  /** OpenAI-compatible judge endpoint; unset = the embedded judge. `JUDGE_BASE_URL` @default undefined */
  baseUrl: string | undefined;
  /** `JUDGE_MODEL` @default 'judge' */
  model: string;
  /** `JUDGE_API_KEY` @default undefined */
  apiKey: string | undefined;
  /** Process-reward votes per pair. `JUDGE_VOTES` @default 3 */
  votes: number;
  /** Hint votes per pair (OPD and combined). `JUDGE_HINT_VOTES` @default 1 */
  hintVotes: number;
  /** Bound on one judge call. `JUDGE_TIMEOUT_MS` @default 60000 */
  timeoutMs: number;
}

/** The teacher of the sample builder (OPD and combined). */
export interface TeacherConfig {
  /**
   * An engine that scores given tokens. `TEACHER_BASE_URL`
   * @default undefined = the upstream engine when one is set, else the built-in base checkpoint
   */
  baseUrl: string | undefined;
  /** `TEACHER_MODEL` @default undefined = `UPSTREAM_MODEL`, else 'teacher' */
  model: string | undefined;
  /** `TEACHER_API_KEY` @default undefined = `UPSTREAM_API_KEY` when the upstream engine is the teacher */
  apiKey: string | undefined;
  /** Teacher top-k log-probs per position; 0 = none. `TEACHER_TOP_K` @default 0 */
  topK: number;
}

/** Where analytics lives in ClickHouse (sink, report, dashboard). The URL is `clickhouseUrl`. */
export interface ClickhouseConfig {
  /** `CLICKHOUSE_DATABASE` @default 'turnstream' */
  database: string;
  /** `CLICKHOUSE_USER` @default undefined = ClickHouse's default user */
  username: string | undefined;
  /** `CLICKHOUSE_PASSWORD`, or read from the file `CLICKHOUSE_PASSWORD_FILE` names. @default undefined */
  password: Secret | undefined;
  /** The CA ClickHouse's https certificate is checked against. `CLICKHOUSE_CA_FILE` @default undefined = Node's roots */
  tls: TlsOptions | undefined;
  /** Prefix of every table. `CLICKHOUSE_TABLE_PREFIX` @default '' */
  tablePrefix: string;
}

/** The ClickHouse sink (`turnstream sink`). */
export interface SinkConfig {
  /** Consumer group. `SINK_GROUP_ID` @default `<topicPrefix>turnstream-clickhouse-sink` */
  groupId: string;
  /** Rows per insert. `SINK_BATCH_ROWS` @default 500 */
  batchRows: number;
  /** Buffered rows at which reading waits for inserts. `SINK_MAX_BUFFERED_ROWS` @default 100 × batchRows */
  maxBufferedRows: number | undefined;
  /** A partial batch is inserted after this long. `SINK_FLUSH_MS` @default 500 */
  flushMs: number;
  /**
   * Replays to store too (`turnstream.replay.<tag>.*` topics, each row under its tag): `all`,
   * `none`, or tags separated by commas. `SINK_REPLAY_TAGS` @default 'all'
   */
  replayTags: readonly string[] | 'all';
  /** With `all`: how often to look for new replay tags, ms; 0 = only at start. `SINK_REPLAY_DISCOVERY_MS` @default 10000 */
  replayDiscoveryMs: number;
}

/** The learner (`turnstream train`); its flags override these. */
export interface TrainConfig {
  /** Samples per step. `TRAIN_BATCH_SIZE` (`--batch-size`) @default 16 */
  batchSize: number;
  /** Samples more than this many versions old are stale. `TRAIN_MAX_STALENESS` (`--max-staleness`) @default 2 */
  maxStaleness: number;
  /** What happens to stale samples: dropped, or kept with truncated importance sampling. `TRAIN_STALENESS` (drop|tis) @default 'drop' */
  staleness: 'drop' | 'tis';
  /** One user's largest share of a batch, in (0, 1]. `TRAIN_MAX_USER_SHARE` (`--max-user-share`) @default 0.5 */
  maxUserShare: number;
  /** A smaller batch is trained once its oldest sample waited this long. `TRAIN_MAX_WAIT_MS` @default 30000 */
  maxWaitMs: number;
  /** Learning rate. `TRAIN_LR` (`--lr`) @default undefined = the learner's LEARNER_LR (1e-3) */
  lr: number | undefined;
  /** Weight users' feedback by their agreement with the others. `TRAIN_CONSENSUS` (`--no-consensus`) @default true */
  consensus: boolean;
  /** KL(π‖π_ref) coefficient. `TRAIN_KL_COEF` @default undefined = the model family's (0.25 LoRA, 0 built-in; trainer/step-defaults.ts) */
  klCoef: number | undefined;
  /**
   * Weight of the newest reward in each user's running mean reward, which is subtracted from
   * their rewards (trainer/reward-baseline.ts); 0 turns it off. `TRAIN_REWARD_BASELINE`
   * @default undefined = the model family's (0.3 LoRA, 0 built-in)
   */
  rewardBaseline: number | undefined;
  /**
   * With the baseline on: the running mean of a user not seen yet, in [−1, 0]; at −1 a user's
   * −1 pushes nothing until some reply has pleased them. `TRAIN_REWARD_BASELINE_PRIOR`
   * @default undefined = the model family's (−1 LoRA, 0 built-in)
   */
  rewardBaselinePrior: number | undefined;
  /**
   * Smaller steps for pleased users: a step's learning rate is scaled by 1 − this × the mean of
   * its users' running mean rewards above 0 (trainer/learner-step.ts), in [0, 1].
   * `TRAIN_PLEASED_DAMPING` @default undefined = the model family's (0)
   */
  pleasedDamping: number | undefined;
  /**
   * Measure the OPD hint's effect on the frozen base instead of the weights being trained
   * (LoRA; trainer/learner-step.ts). `TRAIN_OPD_ON_BASE` @default false
   */
  opdOnBase: boolean;
  /**
   * The OPD term's per-token advantages: raw, centered per sample, or positive only
   * (trainer/losses/advantages.ts). `TRAIN_OPD_ADVANTAGE` @default undefined = the model family's ('positive' LoRA, 'raw' built-in)
   */
  opdAdvantage: 'raw' | 'centered' | 'positive' | 'distribution' | undefined;
  /** Entropy bonus coefficient. `TRAIN_ENTROPY_COEF` @default 0 */
  entropyCoef: number;
  /** LoRA rank (GGUF models). `TRAIN_LORA_RANK` @default 8 */
  loraRank: number;
  /** LoRA alpha; the update is scaled by alpha / rank. `TRAIN_LORA_ALPHA` @default 16 */
  loraAlpha: number;
  /** Matrices LoRA adapts: q, k, v, o, gate, up, down. `TRAIN_LORA_TARGETS` @default 'q,k,v,o' */
  loraTargets: string[];
  /** Adapt only the last N layers (cheaper steps); 0 = all. `TRAIN_LORA_LAST_LAYERS` @default 0 */
  loraLastLayers: number;
  /** Tokens of one training pass; a longer sample loses its prompt's head. `TRAIN_MAX_TOKENS` @default 1024 */
  maxTrainTokens: number;
  /** Fewest trainable samples a version is made from. `TRAIN_MIN_SAMPLES` @default undefined = 8 for GGUF models, 1 for the built-in one */
  minSamples: number | undefined;
  /** Largest KL(π_old‖π_new) of one step before it is halved, then undone. `TRAIN_MAX_KL` @default undefined = 0.1 for GGUF models, none for the built-in one */
  maxKl: number | undefined;
  /** Truncated importance weights for the serving engine's log-prob mismatch. `TRAIN_MISMATCH_TIS` @default true */
  mismatchTis: boolean;
  /** Port of the learner's Prometheus `/metrics`; 0 = off. `TRAINER_METRICS_PORT` @default 0 */
  metricsPort: number;
}

export interface TurnstreamConfig {
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
  /** Folder of the local stack's downloads, data and logs. `TURNSTREAM_HOME` @default ./.turnstream */
  home: string;
  /** Java of the local stack's Kafka and registry. `JAVA_HOME` @default undefined = `java` on the PATH */
  javaHome: string | undefined;
  /** Address every service listens on (gateway, dashboard, trainer metrics). `HOST` @default 127.0.0.1 */
  host: string;
  /** Weight store folder. `TURNSTREAM_WEIGHTS_DIR` @default <home>/weights */
  weightsDir: string;
  /**
   * How the trainer hands its versions to the gateways: `file` (they share the weight store) or
   * `kafka` (the files travel on `turnstream.weight-blobs.v1`, for gateways with homes of their own).
   * `TURNSTREAM_WEIGHTS_TRANSPORT` @default 'file'
   */
  weightsTransport: 'file' | 'kafka';
  /** Model id of the built-in policy and the learner. `TURNSTREAM_MODEL_ID` @default undefined = 'turnstream-tiny' */
  modelId: string | undefined;
  /** Training method of the judge and the sample builder. `TRAIN_METHOD` (rl|opd|combined) @default 'combined' */
  trainMethod: 'rl' | 'opd' | 'combined';
  /** pino level. `LOG_LEVEL` (fatal|error|warn|info|debug|trace|silent) @default 'info' */
  logLevel: string;
  /** Size at which `turnstream up` rotates a service's log. `TURNSTREAM_LOG_MAX_BYTES` @default 52428800 (50 MiB) */
  logMaxBytes: number;
  /** Rotated logs `turnstream up` keeps per service. `TURNSTREAM_LOG_KEEP` @default 3 */
  logKeep: number;
  /** Topic name prefix (tests isolate themselves with it). `TURNSTREAM_TOPIC_PREFIX` @default '' */
  topicPrefix: string;
  model: ModelConfig;
  /** Key the `/metrics` endpoints (gateway, trainer, dashboard) require. `TURNSTREAM_METRICS_KEY` @default undefined = an API key when keys are on, else open */
  metricsKey: string | undefined;
  /** Key the dashboard requires (besides the API keys). `TURNSTREAM_DASHBOARD_KEY` @default undefined = any API key when keys are on, else open */
  dashboardKey: string | undefined;
  llama: LlamaServeConfig;
  tfjs: TfjsConfig;
  gateway: GatewayConfig;
  upstream: UpstreamConfig;
  processor: ProcessorConfig;
  session: SessionConfig;
  grpo: GrpoConfig;
  judge: JudgeConfig;
  teacher: TeacherConfig;
  clickhouse: ClickhouseConfig;
  sink: SinkConfig;
  train: TrainConfig;
}

/** What a numeric setting allows. */
export interface NumberRule {
  /** Whole numbers only. @default false */
  integer?: boolean;
  /** Smallest allowed value, inclusive. */
  min?: number;
  /** Values must be greater than this. */
  above?: number;
  /** Largest allowed value, inclusive. */
  max?: number;
}

/** "an integer >= 1", "a number > 0 and <= 1". */
export function describeRule(rule: NumberRule): string {
  const bounds = [
    rule.above !== undefined ? `> ${rule.above}` : '',
    rule.min !== undefined ? `>= ${rule.min}` : '',
    rule.max !== undefined ? `<= ${rule.max}` : '',
  ].filter(Boolean);
  return `${rule.integer ? 'an integer' : 'a number'}${bounds.length ? ` ${bounds.join(' and ')}` : ''}`;
}

const fits = (n: number, r: NumberRule): boolean =>
  Number.isFinite(n) &&
  (!r.integer || Number.isInteger(n)) &&
  (r.min === undefined || n >= r.min) &&
  (r.above === undefined || n > r.above) &&
  (r.max === undefined || n <= r.max);

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Reads named raw values (environment variables, or a command's flags) into typed ones and
 * collects every problem, so one error can name them all. Unset or blank = the default.
 */
export class SettingsReader {
  private readonly problems: Array<{ name: string; message: string }> = [];

  constructor(private readonly source: Readonly<Record<string, string | undefined>>) {}

  private raw(name: string): string | undefined {
    const v = this.source[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  private problem(name: string, value: string, allowed: string): void {
    this.problems.push({ name, message: `${name}=${JSON.stringify(value)}: expected ${allowed}` });
  }

  /** A number within `rule`, or undefined when unset. */
  optionalNumber(name: string, rule: NumberRule): number | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (fits(n, rule)) return n;
    this.problem(name, v, describeRule(rule));
    return undefined;
  }

  /** A number within `rule`, or `fallback` when unset (or bad, with the problem recorded). */
  number(name: string, fallback: number, rule: NumberRule): number {
    return this.optionalNumber(name, rule) ?? fallback;
  }

  /** One of `choices`, case-insensitive, or undefined when unset. */
  optionalOneOf<T extends string>(name: string, choices: readonly T[]): T | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const lower = v.toLowerCase();
    if ((choices as readonly string[]).includes(lower)) return lower as T;
    this.problem(name, v, `one of ${choices.join(', ')}`);
    return undefined;
  }

  /** One of `choices`, case-insensitive. */
  oneOf<T extends string>(name: string, fallback: T, choices: readonly T[]): T {
    return this.optionalOneOf(name, choices) ?? fallback;
  }

  /**
   * Replay tags: `all`, `none`, or a comma-separated list of tags (letters, digits, `-`, `_`, as
   * `turnstream replay --tag` accepts). Unset = `fallback`.
   */
  replayTags(name: string, fallback: readonly string[] | 'all'): readonly string[] | 'all' {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (v.toLowerCase() === 'all') return 'all';
    if (v.toLowerCase() === 'none') return [];
    const tags = v
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    if (tags.length > 0 && tags.every((t) => /^[A-Za-z0-9_-]+$/.test(t))) return [...new Set(tags)];
    this.problem(name, v, '"all", "none" or tags (letters, digits, - and _) separated by commas');
    return [];
  }

  /** A comma-separated list of `choices` (at least one, no repeats); unset = `fallback`. */
  list<T extends string>(name: string, fallback: T[], choices: readonly T[]): T[] {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const items = [
      ...new Set(
        v
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean),
      ),
    ];
    if (items.length > 0 && items.every((i) => (choices as readonly string[]).includes(i))) return items as T[];
    this.problem(name, v, `a comma-separated list of ${choices.join(', ')}`);
    return fallback;
  }

  /**
   * A secret from `name`, or from the file `name_FILE` names (not both); undefined when neither is
   * set. Problems name the variable and the file, never the value.
   */
  secret(name: string): Secret | undefined {
    const direct = this.source[name];
    const file = this.raw(`${name}_FILE`);
    if (direct !== undefined && direct !== '' && file !== undefined) {
      this.fail(name, `set ${name} or ${name}_FILE, not both`);
      return undefined;
    }
    if (file !== undefined) return this.guard(() => readSecretFile(file, `${name}_FILE`));
    return direct ? new Secret(direct, name) : undefined;
  }

  /** The CA certificates of the file `name` names (checked: readable, PEM); undefined when unset. */
  caFile(name: string): TlsOptions | undefined {
    const file = this.raw(name);
    return file === undefined ? undefined : this.guard(() => readCaFile(file, name));
  }

  /** Records a problem of a setting that is not about its value's form (a missing companion, a clash). */
  fail(name: string, message: string): void {
    this.problems.push({ name, message: `${name}: ${message}` });
  }

  /** The result of `read`, or undefined with its TS_ERR_INVALID_INPUT recorded as a problem. */
  private guard<T>(read: () => T): T | undefined {
    try {
      return read();
    } catch (err) {
      if (!(err instanceof TurnstreamError) || err.code !== ErrorCodes.INVALID_INPUT) throw err;
      this.problems.push({ name: err.param ?? 'setting', message: err.message });
      return undefined;
    }
  }

  /** Whether the variable is set (not blank). */
  has(name: string): boolean {
    return this.raw(name) !== undefined;
  }

  /** The trimmed value, or undefined when unset or blank. */
  text(name: string): string | undefined {
    return this.raw(name);
  }

  /** 1/true/yes/on or 0/false/no/off. */
  boolean(name: string, fallback: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (TRUE.includes(v.toLowerCase())) return true;
    if (FALSE.includes(v.toLowerCase())) return false;
    this.problem(name, v, `one of ${[...TRUE, ...FALSE].join(', ')}`);
    return fallback;
  }

  /**
   * Throws one non-retriable TS_ERR_INVALID_INPUT naming every problem (its `param` is the first
   * bad name); returns `value` when there is none.
   */
  done<T>(value: T, what = 'invalid configuration'): T {
    if (this.problems.length === 0) return value;
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${what}: ${this.problems.map((p) => p.message).join('; ')}`, {
      param: this.problems[0].name,
      retriable: false,
    });
  }
}

/** The rules of the settings a command's flags can also set (so both are checked alike). */
export const RULES = {
  port: { integer: true, min: 0, max: 65535 },
  trainBatchSize: { integer: true, min: 1 },
  trainMaxStaleness: { integer: true, min: 0 },
  trainMaxUserShare: { above: 0, max: 1 },
  trainRewardBaseline: { min: 0, max: 1 },
  trainRewardBaselinePrior: { min: -1, max: 0 },
  trainPleasedDamping: { min: 0, max: 1 },
  trainLr: { above: 0 },
  version: { integer: true, min: 0 },
} as const satisfies Record<string, NumberRule>;

const positive = { above: 0 };
const nonNegative = { min: 0 };
const count = { integer: true, min: 1 };

/** A comma-separated list, blanks dropped. */
const list = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * Reads the configuration from `env` (process.env by default) and `.env`.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT (not retriable) naming every bad variable
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): TurnstreamConfig {
  if (env === process.env) loadDotenv({ path: resolve(cwd, '.env'), quiet: true } as never);
  const r = new SettingsReader(env);
  const home = resolve(cwd, env.TURNSTREAM_HOME ?? '.turnstream');
  const topicPrefix = env.TURNSTREAM_TOPIC_PREFIX ?? '';
  const connections = readConnectionSecurity(r);
  // The sections in this order: a bad value's problem is listed in the order they are read.
  return r.done({
    kafkaBrokers: env.KAFKA_BROKERS || undefined,
    schemaRegistryUrl: env.SCHEMA_REGISTRY_URL || undefined,
    clickhouseUrl: env.CLICKHOUSE_URL || undefined,
    security: connections.security,
    home,
    javaHome: env.JAVA_HOME || undefined,
    host: env.HOST ?? '127.0.0.1',
    weightsDir: resolve(cwd, env.TURNSTREAM_WEIGHTS_DIR ?? resolve(home, 'weights')),
    weightsTransport: r.oneOf('TURNSTREAM_WEIGHTS_TRANSPORT', 'file', ['file', 'kafka']),
    modelId: env.TURNSTREAM_MODEL_ID || undefined,
    trainMethod: r.oneOf('TRAIN_METHOD', 'combined', ['rl', 'opd', 'combined']),
    logLevel: r.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    logMaxBytes: r.number('TURNSTREAM_LOG_MAX_BYTES', 50 * 1024 * 1024, count),
    logKeep: r.number('TURNSTREAM_LOG_KEEP', 3, count),
    topicPrefix,
    model: readModel(env, cwd, home),
    metricsKey: env.TURNSTREAM_METRICS_KEY?.trim() || undefined,
    dashboardKey: env.TURNSTREAM_DASHBOARD_KEY?.trim() || undefined,
    llama: readLlama(r, env),
    tfjs: readTfjs(r, env, cwd),
    gateway: readGateway(r, env),
    upstream: {
      baseUrl: env.UPSTREAM_BASE_URL || undefined,
      apiKey: env.UPSTREAM_API_KEY || undefined,
      model: env.UPSTREAM_MODEL || undefined,
    },
    processor: {
      concurrency: r.optionalNumber('PROCESSOR_CONCURRENCY', count),
      sessionTimeoutMs: r.optionalNumber('PROCESSOR_SESSION_TIMEOUT_MS', count),
    },
    grpo: {
      settleMs: r.number('TRAJECTORY_SETTLE_MS', 30_000, positive),
      normalizeStd: r.boolean('GRPO_NORMALIZE_STD', true),
      batchTimeoutMs: r.number('GRPO_BATCH_TIMEOUT_MS', 300_000, positive),
    },
    session: {
      idleTimeoutMs: r.number('SESSION_IDLE_TIMEOUT_MS', 30 * 60 * 1000, positive),
      endPolicy: r.oneOf('SESSION_END_POLICY', 'masked', ['masked', 'drop']),
      feedbackGraceMs: r.optionalNumber('FEEDBACK_GRACE_MS', nonNegative),
    },
    judge: readJudge(r, env),
    teacher: readTeacher(r, env),
    clickhouse: {
      database: env.CLICKHOUSE_DATABASE || 'turnstream',
      username: env.CLICKHOUSE_USER || undefined,
      password: connections.clickhouse.password,
      tls: connections.clickhouse.tls,
      tablePrefix: env.CLICKHOUSE_TABLE_PREFIX ?? '',
    },
    sink: readSink(r, env, topicPrefix),
    train: readTrain(r),
  });
}

type Env = Record<string, string | undefined>;

/** `TURNSTREAM_MODEL`, the models cache and the Hugging Face hub. */
function readModel(env: Env, cwd: string, home: string): ModelConfig {
  return {
    spec: env.TURNSTREAM_MODEL?.trim() || 'smollm2-135m',
    cacheDir: resolve(cwd, env.TURNSTREAM_MODELS_DIR || resolve(home, 'models')),
    hfEndpoint: env.HF_ENDPOINT?.trim() || 'https://huggingface.co',
    hfToken: env.HF_TOKEN || undefined,
  };
}

/** `LLAMA_*`: how the gateway serves a GGUF model. */
function readLlama(r: SettingsReader, env: Env): LlamaServeConfig {
  return {
    contextSize: r.optionalNumber('LLAMA_CONTEXT_SIZE', { integer: true, min: 64 }),
    parallel: r.number('LLAMA_PARALLEL', 2, count),
    threads: r.optionalNumber('LLAMA_THREADS', count),
    temperature: r.number('LLAMA_TEMPERATURE', 0.3, { min: 0, max: 2 }),
    topP: r.number('LLAMA_TOP_P', 0.9, { above: 0, max: 1 }),
    maxTokens: r.number('LLAMA_MAX_TOKENS', 512, count),
    systemPrompt: env.TURNSTREAM_SYSTEM_PROMPT || undefined,
    gpu: r.oneOf('LLAMA_GPU', 'auto', ['auto', 'off']),
  };
}

/** `TFJS_*`: the tfjs backend and the native builds' cache. */
function readTfjs(r: SettingsReader, env: Env, cwd: string): TfjsConfig {
  return {
    backend: r.oneOf('TFJS_BACKEND', 'auto', ['auto', 'tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']),
    nativeDir: resolve(cwd, env.TURNSTREAM_NATIVE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'turnstream', 'native')),
    gpu: r.oneOf('TFJS_GPU', 'auto', ['auto', 'off']),
  };
}

/** `PORT`, the API keys and `GATEWAY_*`. */
function readGateway(r: SettingsReader, env: Env): GatewayConfig {
  return {
    port: r.number('PORT', 30000, RULES.port),
    apiKeys: list(env.TURNSTREAM_API_KEYS),
    serviceKeys: list(env.TURNSTREAM_SERVICE_KEYS),
    maxConcurrentGenerations: r.number('GATEWAY_MAX_CONCURRENT_GENERATIONS', 8, count),
    maxQueuedGenerations: r.number('GATEWAY_MAX_QUEUED_GENERATIONS', 64, { integer: true, min: 0 }),
    queueTimeoutMs: r.number('GATEWAY_QUEUE_TIMEOUT_MS', 30_000, positive),
    streamStallTimeoutMs: r.number('GATEWAY_STREAM_STALL_TIMEOUT_MS', 30_000, positive),
    streamBufferBytes: r.number('GATEWAY_STREAM_BUFFER_BYTES', 1024 * 1024, count),
    outboxReadyMaxDepth: r.number('GATEWAY_OUTBOX_READY_MAX_DEPTH', 10_000, { integer: true, min: 0 }),
    outboxStallMs: r.number('GATEWAY_OUTBOX_STALL_MS', 60_000, positive),
    captureWaitMs: r.number('GATEWAY_CAPTURE_WAIT_MS', 1000, positive),
    defaultTurnType: r.oneOf('DEFAULT_TURN_TYPE', 'main', ['main', 'side']),
    bodyLimitBytes: r.optionalNumber('GATEWAY_BODY_LIMIT_BYTES', count),
    generationTimeoutMs: r.optionalNumber('GATEWAY_GENERATION_TIMEOUT_MS', positive),
    shareSessions: r.boolean('GATEWAY_SHARE_SESSIONS', true),
    sessionShareWindowMs: r.number('GATEWAY_SESSION_SHARE_WINDOW_MS', 30 * 60 * 1000, nonNegative),
  };
}

/** `JUDGE_*`. */
function readJudge(r: SettingsReader, env: Env): JudgeConfig {
  return {
    baseUrl: env.JUDGE_BASE_URL || undefined,
    model: env.JUDGE_MODEL ?? 'judge',
    apiKey: env.JUDGE_API_KEY || undefined,
    votes: r.number('JUDGE_VOTES', 3, count),
    hintVotes: r.number('JUDGE_HINT_VOTES', 1, count),
    timeoutMs: r.number('JUDGE_TIMEOUT_MS', 60_000, positive),
  };
}

/** `TEACHER_*`. */
function readTeacher(r: SettingsReader, env: Env): TeacherConfig {
  return {
    baseUrl: env.TEACHER_BASE_URL || undefined,
    model: env.TEACHER_MODEL || undefined,
    apiKey: env.TEACHER_API_KEY || undefined,
    topK: r.number('TEACHER_TOP_K', 0, { integer: true, min: 0 }),
  };
}

/** `SINK_*`: the ClickHouse sink. */
function readSink(r: SettingsReader, env: Env, topicPrefix: string): SinkConfig {
  return {
    groupId: env.SINK_GROUP_ID || `${topicPrefix}turnstream-clickhouse-sink`,
    batchRows: r.number('SINK_BATCH_ROWS', 500, count),
    maxBufferedRows: r.optionalNumber('SINK_MAX_BUFFERED_ROWS', count),
    flushMs: r.number('SINK_FLUSH_MS', 500, positive),
    replayTags: r.replayTags('SINK_REPLAY_TAGS', 'all'),
    replayDiscoveryMs: r.number('SINK_REPLAY_DISCOVERY_MS', 10_000, nonNegative),
  };
}

/** `TRAIN_*` and `TRAINER_METRICS_PORT`: the learner. */
function readTrain(r: SettingsReader): TrainConfig {
  return {
    batchSize: r.number('TRAIN_BATCH_SIZE', 16, RULES.trainBatchSize),
    maxStaleness: r.number('TRAIN_MAX_STALENESS', 2, RULES.trainMaxStaleness),
    staleness: r.oneOf('TRAIN_STALENESS', 'drop', ['drop', 'tis']),
    maxUserShare: r.number('TRAIN_MAX_USER_SHARE', 0.5, RULES.trainMaxUserShare),
    maxWaitMs: r.number('TRAIN_MAX_WAIT_MS', 30_000, nonNegative),
    lr: r.optionalNumber('TRAIN_LR', RULES.trainLr),
    consensus: r.boolean('TRAIN_CONSENSUS', true),
    klCoef: r.optionalNumber('TRAIN_KL_COEF', nonNegative),
    rewardBaseline: r.optionalNumber('TRAIN_REWARD_BASELINE', RULES.trainRewardBaseline),
    rewardBaselinePrior: r.optionalNumber('TRAIN_REWARD_BASELINE_PRIOR', RULES.trainRewardBaselinePrior),
    pleasedDamping: r.optionalNumber('TRAIN_PLEASED_DAMPING', RULES.trainPleasedDamping),
    opdOnBase: r.boolean('TRAIN_OPD_ON_BASE', false),
    opdAdvantage: r.optionalOneOf('TRAIN_OPD_ADVANTAGE', ['raw', 'centered', 'positive', 'distribution']),
    entropyCoef: r.number('TRAIN_ENTROPY_COEF', 0, nonNegative),
    loraRank: r.number('TRAIN_LORA_RANK', 8, count),
    loraAlpha: r.number('TRAIN_LORA_ALPHA', 16, positive),
    loraTargets: r.list('TRAIN_LORA_TARGETS', ['q', 'k', 'v', 'o'], ['q', 'k', 'v', 'o', 'gate', 'up', 'down']),
    loraLastLayers: r.number('TRAIN_LORA_LAST_LAYERS', 0, { integer: true, min: 0 }),
    maxTrainTokens: r.number('TRAIN_MAX_TOKENS', 1024, { integer: true, min: 16 }),
    minSamples: r.optionalNumber('TRAIN_MIN_SAMPLES', count),
    maxKl: r.optionalNumber('TRAIN_MAX_KL', positive),
    mismatchTis: r.boolean('TRAIN_MISMATCH_TIS', true),
    metricsPort: r.number('TRAINER_METRICS_PORT', 0, RULES.port),
  };
}
