/**
 * The one place that reads the environment (and a `.env` file). It maps each variable onto the
 * settings it names (stack/settings.ts) and nothing else: what is not set stays unset, and
 * `resolveSettings` fills it from the modules' DEFAULTS objects. A value that is not allowed (not
 * a number, out of range, not one of the choices) fails the start with one TS_ERR_INVALID_INPUT
 * error listing every bad variable, its value and what is allowed.
 */
import { config as loadDotenv } from 'dotenv';
import { join, resolve } from 'node:path';
import { ErrorCodes, readCaFile, readSecretFile, Secret, TurnstreamError, type TlsOptions } from '../core/index.ts';
import { readConnectionSecurity } from './connection-settings.ts';
// stack/settings.ts alone (not stack/index.ts): reading the configuration loads no service.
import { resolveSettings, type StackSettings, type StackSettingsInput } from '../stack/settings.ts';

export type {
  StackSettings as TurnstreamConfig,
  GatewaySettings as GatewayConfig,
  UpstreamSettings as UpstreamConfig,
  ModelSettings as ModelConfig,
  LlamaServeSettings as LlamaServeConfig,
  TfjsSettings as TfjsConfig,
  GrpoSettings as GrpoConfig,
  ProcessorSettings as ProcessorConfig,
  SessionSettings as SessionConfig,
  JudgeSettings as JudgeConfig,
  TeacherSettings as TeacherConfig,
  ClickhouseSettings as ClickhouseConfig,
  SinkSettings as SinkConfig,
  TrainSettings as TrainConfig,
} from '../stack/settings.ts';

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
    return this.optionalReplayTags(name) ?? fallback;
  }

  /** Replay tags as {@link replayTags} reads them, or undefined when unset. */
  optionalReplayTags(name: string): readonly string[] | 'all' | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
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
    return this.optionalList(name, choices) ?? fallback;
  }

  /** A comma-separated list of `choices` (at least one, no repeats), or undefined when unset (or bad). */
  optionalList<T extends string>(name: string, choices: readonly T[]): T[] | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
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
    return undefined;
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
    return this.optionalBoolean(name) ?? fallback;
  }

  /** 1/true/yes/on or 0/false/no/off, or undefined when unset (or bad). */
  optionalBoolean(name: string): boolean | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    if (TRUE.includes(v.toLowerCase())) return true;
    if (FALSE.includes(v.toLowerCase())) return false;
    this.problem(name, v, `one of ${[...TRUE, ...FALSE].join(', ')}`);
    return undefined;
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

type Env = Record<string, string | undefined>;

/** A variable's value, blank = unset. */
const str = (env: Env, name: string): string | undefined => env[name]?.trim() || undefined;

/** A comma-separated list, blanks dropped; unset (or nothing in it) = undefined. */
const list = (v: string | undefined): string[] | undefined => {
  const items = (v ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  return items.length > 0 ? items : undefined;
};

/** A folder, relative to `cwd`. */
const dir = (v: string | undefined, cwd: string): string | undefined => (v ? resolve(cwd, v) : undefined);

/**
 * The settings the environment sets (`env`, process.env by default, and `.env`), nothing more:
 * an unset or blank variable leaves its setting out.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT (not retriable) naming every bad variable
 */
export function readSettings(env: Env = process.env, cwd = process.cwd()): StackSettingsInput {
  if (env === process.env) loadDotenv({ path: resolve(cwd, '.env'), quiet: true } as never);
  const r = new SettingsReader(env);
  const xdg = str(env, 'XDG_CACHE_HOME');
  const connections = readConnectionSecurity(r);
  // The sections in this order: a bad value's problem is listed in the order they are read.
  return r.done({
    kafkaBrokers: str(env, 'KAFKA_BROKERS'),
    schemaRegistryUrl: str(env, 'SCHEMA_REGISTRY_URL'),
    clickhouseUrl: str(env, 'CLICKHOUSE_URL'),
    security: connections.security,
    home: dir(str(env, 'TURNSTREAM_HOME'), cwd),
    javaHome: str(env, 'JAVA_HOME'),
    host: str(env, 'HOST'),
    weightsDir: dir(str(env, 'TURNSTREAM_WEIGHTS_DIR'), cwd),
    weightsTransport: r.optionalOneOf('TURNSTREAM_WEIGHTS_TRANSPORT', ['file', 'kafka']),
    modelId: str(env, 'TURNSTREAM_MODEL_ID'),
    trainMethod: r.optionalOneOf('TRAIN_METHOD', ['rl', 'opd', 'combined']),
    logLevel: r.optionalOneOf('LOG_LEVEL', LOG_LEVELS),
    logMaxBytes: r.optionalNumber('TURNSTREAM_LOG_MAX_BYTES', count),
    logKeep: r.optionalNumber('TURNSTREAM_LOG_KEEP', count),
    topicPrefix: str(env, 'TURNSTREAM_TOPIC_PREFIX'),
    model: {
      spec: str(env, 'TURNSTREAM_MODEL'),
      cacheDir: dir(str(env, 'TURNSTREAM_MODELS_DIR'), cwd),
      hfEndpoint: str(env, 'HF_ENDPOINT'),
      hfToken: str(env, 'HF_TOKEN'),
    },
    metricsKey: str(env, 'TURNSTREAM_METRICS_KEY'),
    dashboardKey: str(env, 'TURNSTREAM_DASHBOARD_KEY'),
    llama: {
      contextSize: r.optionalNumber('LLAMA_CONTEXT_SIZE', { integer: true, min: 64 }),
      parallel: r.optionalNumber('LLAMA_PARALLEL', count),
      batching: r.optionalOneOf('LLAMA_BATCHING', ['separate', 'shared']),
      threads: r.optionalNumber('LLAMA_THREADS', count),
      temperature: r.optionalNumber('LLAMA_TEMPERATURE', { min: 0, max: 2 }),
      topP: r.optionalNumber('LLAMA_TOP_P', { above: 0, max: 1 }),
      maxTokens: r.optionalNumber('LLAMA_MAX_TOKENS', count),
      systemPrompt: env.TURNSTREAM_SYSTEM_PROMPT || undefined,
      gpu: r.optionalOneOf('LLAMA_GPU', ['auto', 'off']),
    },
    tfjs: {
      backend: r.optionalOneOf('TFJS_BACKEND', ['auto', 'tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']),
      nativeDir: dir(str(env, 'TURNSTREAM_NATIVE_DIR') ?? (xdg ? join(xdg, 'turnstream', 'native') : undefined), cwd),
      gpu: r.optionalOneOf('TFJS_GPU', ['auto', 'off']),
    },
    gateway: readGateway(r, env),
    upstream: { baseUrl: str(env, 'UPSTREAM_BASE_URL'), apiKey: str(env, 'UPSTREAM_API_KEY'), model: str(env, 'UPSTREAM_MODEL') },
    processor: {
      concurrency: r.optionalNumber('PROCESSOR_CONCURRENCY', count),
      sessionTimeoutMs: r.optionalNumber('PROCESSOR_SESSION_TIMEOUT_MS', count),
    },
    grpo: {
      settleMs: r.optionalNumber('TRAJECTORY_SETTLE_MS', positive),
      normalizeStd: r.optionalBoolean('GRPO_NORMALIZE_STD'),
      batchTimeoutMs: r.optionalNumber('GRPO_BATCH_TIMEOUT_MS', positive),
    },
    session: {
      idleTimeoutMs: r.optionalNumber('SESSION_IDLE_TIMEOUT_MS', positive),
      endPolicy: r.optionalOneOf('SESSION_END_POLICY', ['masked', 'drop']),
      feedbackGraceMs: r.optionalNumber('FEEDBACK_GRACE_MS', nonNegative),
    },
    judge: {
      baseUrl: str(env, 'JUDGE_BASE_URL'),
      model: str(env, 'JUDGE_MODEL'),
      apiKey: str(env, 'JUDGE_API_KEY'),
      votes: r.optionalNumber('JUDGE_VOTES', count),
      hintVotes: r.optionalNumber('JUDGE_HINT_VOTES', count),
      timeoutMs: r.optionalNumber('JUDGE_TIMEOUT_MS', positive),
    },
    teacher: {
      baseUrl: str(env, 'TEACHER_BASE_URL'),
      model: str(env, 'TEACHER_MODEL'),
      apiKey: str(env, 'TEACHER_API_KEY'),
      topK: r.optionalNumber('TEACHER_TOP_K', { integer: true, min: 0 }),
    },
    clickhouse: {
      database: str(env, 'CLICKHOUSE_DATABASE'),
      username: str(env, 'CLICKHOUSE_USER'),
      password: connections.clickhouse.password,
      tls: connections.clickhouse.tls,
      tablePrefix: str(env, 'CLICKHOUSE_TABLE_PREFIX'),
    },
    sink: {
      groupId: str(env, 'SINK_GROUP_ID'),
      batchRows: r.optionalNumber('SINK_BATCH_ROWS', count),
      maxBufferedRows: r.optionalNumber('SINK_MAX_BUFFERED_ROWS', count),
      flushMs: r.optionalNumber('SINK_FLUSH_MS', positive),
      replayTags: r.optionalReplayTags('SINK_REPLAY_TAGS'),
      replayDiscoveryMs: r.optionalNumber('SINK_REPLAY_DISCOVERY_MS', nonNegative),
    },
    train: readTrain(r),
  });
}

/**
 * The configuration: the settings the environment sets (readSettings), every other one from the
 * modules' defaults (stack/settings.ts resolveSettings).
 * @throws TurnstreamError TS_ERR_INVALID_INPUT (not retriable) naming every bad variable
 */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): StackSettings {
  return resolveSettings(readSettings(env, cwd), cwd);
}

/** `PORT`, the API keys and `GATEWAY_*`. */
function readGateway(r: SettingsReader, env: Env): StackSettingsInput['gateway'] {
  return {
    port: r.optionalNumber('PORT', RULES.port),
    apiKeys: list(env.TURNSTREAM_API_KEYS),
    serviceKeys: list(env.TURNSTREAM_SERVICE_KEYS),
    maxConcurrentGenerations: r.optionalNumber('GATEWAY_MAX_CONCURRENT_GENERATIONS', count),
    maxQueuedGenerations: r.optionalNumber('GATEWAY_MAX_QUEUED_GENERATIONS', { integer: true, min: 0 }),
    queueTimeoutMs: r.optionalNumber('GATEWAY_QUEUE_TIMEOUT_MS', positive),
    streamStallTimeoutMs: r.optionalNumber('GATEWAY_STREAM_STALL_TIMEOUT_MS', positive),
    streamBufferBytes: r.optionalNumber('GATEWAY_STREAM_BUFFER_BYTES', count),
    outboxReadyMaxDepth: r.optionalNumber('GATEWAY_OUTBOX_READY_MAX_DEPTH', { integer: true, min: 0 }),
    outboxStallMs: r.optionalNumber('GATEWAY_OUTBOX_STALL_MS', positive),
    captureWaitMs: r.optionalNumber('GATEWAY_CAPTURE_WAIT_MS', positive),
    defaultTurnType: r.optionalOneOf('DEFAULT_TURN_TYPE', ['main', 'side']),
    bodyLimitBytes: r.optionalNumber('GATEWAY_BODY_LIMIT_BYTES', count),
    generationTimeoutMs: r.optionalNumber('GATEWAY_GENERATION_TIMEOUT_MS', positive),
    shareSessions: r.optionalBoolean('GATEWAY_SHARE_SESSIONS'),
    sessionShareWindowMs: r.optionalNumber('GATEWAY_SESSION_SHARE_WINDOW_MS', nonNegative),
  };
}

/** `TRAIN_*` and `TRAINER_METRICS_PORT`: the learner. */
function readTrain(r: SettingsReader): StackSettingsInput['train'] {
  return {
    batchSize: r.optionalNumber('TRAIN_BATCH_SIZE', RULES.trainBatchSize),
    maxStaleness: r.optionalNumber('TRAIN_MAX_STALENESS', RULES.trainMaxStaleness),
    staleness: r.optionalOneOf('TRAIN_STALENESS', ['drop', 'tis']),
    maxUserShare: r.optionalNumber('TRAIN_MAX_USER_SHARE', RULES.trainMaxUserShare),
    maxWaitMs: r.optionalNumber('TRAIN_MAX_WAIT_MS', nonNegative),
    lr: r.optionalNumber('TRAIN_LR', RULES.trainLr),
    consensus: r.optionalBoolean('TRAIN_CONSENSUS'),
    klCoef: r.optionalNumber('TRAIN_KL_COEF', nonNegative),
    rewardBaseline: r.optionalNumber('TRAIN_REWARD_BASELINE', RULES.trainRewardBaseline),
    rewardBaselinePrior: r.optionalNumber('TRAIN_REWARD_BASELINE_PRIOR', RULES.trainRewardBaselinePrior),
    pleasedDamping: r.optionalNumber('TRAIN_PLEASED_DAMPING', RULES.trainPleasedDamping),
    opdOnBase: r.optionalBoolean('TRAIN_OPD_ON_BASE'),
    opdAdvantage: r.optionalOneOf('TRAIN_OPD_ADVANTAGE', ['raw', 'centered', 'positive', 'distribution']),
    entropyCoef: r.optionalNumber('TRAIN_ENTROPY_COEF', nonNegative),
    loraRank: r.optionalNumber('TRAIN_LORA_RANK', count),
    loraAlpha: r.optionalNumber('TRAIN_LORA_ALPHA', positive),
    loraTargets: r.optionalList('TRAIN_LORA_TARGETS', ['q', 'k', 'v', 'o', 'gate', 'up', 'down']),
    loraLastLayers: r.optionalNumber('TRAIN_LORA_LAST_LAYERS', { integer: true, min: 0 }),
    maxTrainTokens: r.optionalNumber('TRAIN_MAX_TOKENS', { integer: true, min: 16 }),
    minSamples: r.optionalNumber('TRAIN_MIN_SAMPLES', count),
    maxKl: r.optionalNumber('TRAIN_MAX_KL', positive),
    mismatchTis: r.optionalBoolean('TRAIN_MISMATCH_TIS'),
    metricsPort: r.optionalNumber('TRAINER_METRICS_PORT', RULES.port),
  };
}
