/**
 * Every variable in docs/configuration.md reaches the option it names, and the default the page
 * gives it is the module's own (its DEFAULTS object): for each variable, a value other than the
 * default is set and found in what stack/ builds from the configuration (the gateway's, the
 * learner's, the processors', the sink's options; the settings themselves for what no service
 * there takes), the page's default is read and compared with the module's, and with nothing set
 * that module default is what arrives. A variable on the page without a row here fails the test.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import type { Kafka } from 'kafkajs';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../../cli/config.ts';
import { Secret } from '../../../core/index.ts';
import { ANALYTICS_DEFAULTS } from '../../../warehouse/index.ts';
import { ADMISSION_DEFAULTS, GATEWAY_DEFAULTS, LLAMA_ENGINE_DEFAULTS, SSE_DEFAULTS } from '../../../gateway/index.ts';
import {
  DEFAULT_SETTLE_MS,
  GROUP_BUILDER_DEFAULTS,
  JUDGE_DEFAULTS,
  PROCESSOR_DEFAULTS,
  SAMPLE_BUILDER_DEFAULTS,
  SESSION_ASSEMBLER_DEFAULTS,
  SINK_DEFAULTS,
} from '../../../processors/index.ts';
import {
  analyticsOptions,
  gatewayOptions,
  learnerPlan,
  processorOptions,
  sinkOptions,
  STACK_DEFAULTS,
  teacherUpstream,
  type ServedModel,
} from '../../../stack/index.ts';
import type { EventCodecs } from '../../../streams/index.ts';
import { LEARNER_DEFAULTS, LEARNER_FAMILY_DEFAULTS } from '../../../trainer/index.ts';
import { ROOT } from './markdown.ts';

const CWD = '/srv/work';
/** A CA (test/fixtures/tls) and a password file, for the settings that name a file. */
const CA = fileURLToPath(new URL('../../fixtures/tls/ca.pem', import.meta.url));
const PASSWORD_FILE = join(mkdtempSync(join(tmpdir(), 'config-defaults-')), 'password');
writeFileSync(PASSWORD_FILE, 'from-a-file\n');
/** A secret's value (a `Secret` prints as `[secret from …]`). */
const revealed = (v: unknown): unknown => (v instanceof Secret ? v.reveal() : v);
const LLAMA: ServedModel = { kind: 'llama', name: 'm', modelId: 'm', path: '/m.gguf', sha256: '00', systemPrompt: undefined };
const BUILTIN: ServedModel = { kind: 'builtin', modelId: 'turnstream-tiny' };

/** What stack/ builds from the configuration of `env` (nothing started). */
function built(env: Record<string, string>) {
  const config = loadConfig(env, CWD);
  const link = { kafka: {} as Kafka, codecs: { naming: { prefix: config.topicPrefix } } as EventCodecs };
  return {
    config,
    gateway: gatewayOptions(config, LLAMA),
    upstream: config.upstream.baseUrl ? gatewayOptions(config, null).upstream : undefined,
    lora: learnerPlan(config, LLAMA),
    builtin: learnerPlan(config, BUILTIN),
    processors: processorOptions(config, link),
    sink: sinkOptions(config, link),
    analytics: analyticsOptions(config),
    teacher: teacherUpstream(config),
  };
}
type Built = ReturnType<typeof built>;

/** The default the page must give: a module value, one per model family, or a phrase (for what is not a value). */
type Default = { value: unknown } | { lora: unknown; builtin: unknown } | { says: string; value?: unknown };

interface Row {
  /** A value other than the default. */
  set: string;
  /** The option the variable names, in what stack/ builds. */
  at: (b: Built) => unknown;
  /** What arrives there when set. @default the value set, as a number when it is one */
  is?: unknown;
  /** The module's default, and that the page says it. */
  default: Default;
  /** Other variables this one needs to reach its option. */
  with?: Record<string, string>;
  /** The variables set while this one is not, for its default. @default `with` */
  unsetWith?: Record<string, string>;
}

const v = (value: unknown): Default => ({ value });
const lora = (b: Built) => b.lora.settings;
const step = (b: Built) => b.lora.options.step!;
const kafkaSecurity = (b: Built) => b.gateway.kafka?.security?.kafka;
const registrySecurity = (b: Built) => b.gateway.kafka?.security?.registry;

const ROWS: Record<string, Row> = {
  // shared
  KAFKA_BROKERS: {
    set: 'k:9092',
    at: (b) => b.gateway.kafka?.brokers,
    is: ['k:9092'],
    default: { says: 'local stack', value: ['127.0.0.1:9092'] },
  },
  KAFKA_SECURITY_PROTOCOL: {
    set: 'ssl',
    at: (b) => kafkaSecurity(b),
    is: { tls: {} },
    default: { says: 'else `plaintext`', value: undefined },
  },
  KAFKA_SASL_MECHANISM: {
    set: 'plain',
    with: { KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' },
    at: (b) => kafkaSecurity(b)?.sasl?.mechanism,
    default: v('scram-sha-512'),
  },
  KAFKA_SASL_USERNAME: {
    set: 'u',
    with: { KAFKA_SASL_PASSWORD: 'p' },
    at: (b) => kafkaSecurity(b)?.sasl?.username,
    default: { says: 'unset', value: undefined },
  },
  KAFKA_SASL_PASSWORD: {
    set: 'p',
    with: { KAFKA_SASL_USERNAME: 'u' },
    unsetWith: {},
    at: (b) => revealed(kafkaSecurity(b)?.sasl?.password),
    default: { says: 'unset', value: undefined },
  },
  KAFKA_SASL_PASSWORD_FILE: {
    set: PASSWORD_FILE,
    with: { KAFKA_SASL_USERNAME: 'u' },
    unsetWith: {},
    at: (b) => revealed(kafkaSecurity(b)?.sasl?.password),
    is: 'from-a-file',
    default: { says: 'unset', value: undefined },
  },
  KAFKA_TLS_CA_FILE: {
    set: CA,
    at: (b) => kafkaSecurity(b)?.tls?.setting,
    is: `KAFKA_TLS_CA_FILE=${CA}`,
    default: { says: "Node's trusted roots", value: undefined },
  },
  SCHEMA_REGISTRY_USERNAME: { set: 'ru', at: (b) => registrySecurity(b)?.username, default: { says: 'unset', value: undefined } },
  SCHEMA_REGISTRY_PASSWORD: {
    set: 'rp',
    with: { SCHEMA_REGISTRY_USERNAME: 'ru' },
    at: (b) => revealed(registrySecurity(b)?.password),
    default: { says: 'unset', value: undefined },
  },
  SCHEMA_REGISTRY_PASSWORD_FILE: {
    set: PASSWORD_FILE,
    with: { SCHEMA_REGISTRY_USERNAME: 'ru' },
    at: (b) => revealed(registrySecurity(b)?.password),
    is: 'from-a-file',
    default: { says: 'unset', value: undefined },
  },
  SCHEMA_REGISTRY_CA_FILE: {
    set: CA,
    at: (b) => registrySecurity(b)?.tls?.setting,
    is: `SCHEMA_REGISTRY_CA_FILE=${CA}`,
    default: { says: "Node's trusted roots", value: undefined },
  },
  SCHEMA_REGISTRY_URL: {
    set: 'http://r:8081',
    at: (b) => b.gateway.kafka?.registryUrl,
    default: { says: 'local stack', value: 'http://127.0.0.1:8081/apis/ccompat/v7' },
  },
  CLICKHOUSE_URL: {
    set: 'http://c:8123',
    at: (b) => b.sink.analytics.url,
    default: { says: 'local stack', value: 'http://127.0.0.1:8123' },
  },
  TURNSTREAM_HOME: {
    set: '/h',
    at: (b) => b.gateway.home,
    default: { says: `\`./${STACK_DEFAULTS.home}\``, value: resolve(CWD, STACK_DEFAULTS.home) },
  },
  JAVA_HOME: { set: '/jdk', at: (b) => b.config.javaHome, default: { says: '`java` on the `PATH`', value: undefined } },
  HOST: { set: '0.0.0.0', at: (b) => b.gateway.host, default: v(GATEWAY_DEFAULTS.host) },
  TURNSTREAM_WEIGHTS_DIR: {
    set: '/w',
    at: (b) => b.gateway.llama?.weightsDir,
    default: { says: '$TURNSTREAM_HOME/weights', value: resolve(CWD, '.turnstream', 'weights') },
  },
  TURNSTREAM_MODEL: { set: 'builtin', at: (b) => b.config.model.spec, default: v(STACK_DEFAULTS.model) },
  TURNSTREAM_MODELS_DIR: {
    set: '/m',
    at: (b) => b.config.model.cacheDir,
    default: { says: '$TURNSTREAM_HOME/models', value: resolve(CWD, '.turnstream', 'models') },
  },
  HF_ENDPOINT: { set: 'https://mirror', at: (b) => b.config.model.hfEndpoint, default: v(STACK_DEFAULTS.hfEndpoint) },
  HF_TOKEN: { set: 'hf_x', at: (b) => b.config.model.hfToken, default: { says: 'unset', value: undefined } },
  TURNSTREAM_WEIGHTS_TRANSPORT: {
    set: 'kafka',
    at: (b) => b.lora.options.weightsTransport,
    default: v(STACK_DEFAULTS.weightsTransport),
  },
  // The served model's id (stack/served-model.ts takes it over the catalog's); the built-in model's own is turnstream-tiny.
  TURNSTREAM_MODEL_ID: { set: 'mine', at: (b) => b.config.modelId, default: { says: '`turnstream-tiny`', value: undefined } },
  TRAIN_METHOD: { set: 'rl', at: (b) => b.processors.sampleBuilder.method, default: v(SAMPLE_BUILDER_DEFAULTS.method) },
  TURNSTREAM_TOPIC_PREFIX: {
    set: 't1.',
    at: (b) => b.gateway.kafka?.naming?.prefix,
    default: { says: 'empty', value: STACK_DEFAULTS.topicPrefix },
  },
  LOG_LEVEL: { set: 'warn', at: (b) => b.config.logLevel, default: v(STACK_DEFAULTS.logLevel) },
  TURNSTREAM_LOG_MAX_BYTES: { set: '1048576', at: (b) => b.config.logMaxBytes, default: v(STACK_DEFAULTS.logMaxBytes) },
  TURNSTREAM_LOG_KEEP: { set: '5', at: (b) => b.config.logKeep, default: v(STACK_DEFAULTS.logKeep) },
  TURNSTREAM_METRICS_KEY: { set: 'mk', at: (b) => b.gateway.metricsKey, default: { says: 'unset', value: undefined } },
  TURNSTREAM_DASHBOARD_KEY: { set: 'dk', at: (b) => b.config.dashboardKey, default: { says: 'unset', value: undefined } },
  // gateway
  PORT: { set: '8000', at: (b) => b.gateway.port, default: v(GATEWAY_DEFAULTS.port) },
  TURNSTREAM_API_KEYS: { set: 'a:u,b', at: (b) => b.gateway.apiKeys, is: ['a:u', 'b'], default: { says: 'empty', value: [] } },
  TURNSTREAM_SERVICE_KEYS: { set: 's', at: (b) => b.gateway.serviceKeys, is: ['s'], default: { says: 'empty', value: [] } },
  GATEWAY_MAX_CONCURRENT_GENERATIONS: {
    set: '3',
    at: (b) => b.gateway.admission?.maxConcurrent,
    default: v(ADMISSION_DEFAULTS.maxConcurrent),
  },
  GATEWAY_MAX_QUEUED_GENERATIONS: { set: '9', at: (b) => b.gateway.admission?.maxQueue, default: v(ADMISSION_DEFAULTS.maxQueue) },
  GATEWAY_QUEUE_TIMEOUT_MS: { set: '5', at: (b) => b.gateway.admission?.queueTimeoutMs, default: v(ADMISSION_DEFAULTS.queueTimeoutMs) },
  GATEWAY_STREAM_STALL_TIMEOUT_MS: { set: '7', at: (b) => b.gateway.streams?.stallTimeoutMs, default: v(SSE_DEFAULTS.stallTimeoutMs) },
  GATEWAY_STREAM_BUFFER_BYTES: { set: '99', at: (b) => b.gateway.streams?.maxBufferedBytes, default: v(SSE_DEFAULTS.maxBufferedBytes) },
  GATEWAY_OUTBOX_READY_MAX_DEPTH: { set: '11', at: (b) => b.gateway.outboxReadyMaxDepth, default: v(GATEWAY_DEFAULTS.outboxReadyMaxDepth) },
  GATEWAY_OUTBOX_STALL_MS: { set: '12', at: (b) => b.gateway.outboxStallMs, default: v(GATEWAY_DEFAULTS.outboxStallMs) },
  GATEWAY_CAPTURE_WAIT_MS: { set: '13', at: (b) => b.gateway.captureBoundMs, default: v(GATEWAY_DEFAULTS.captureBoundMs) },
  DEFAULT_TURN_TYPE: { set: 'side', at: (b) => b.gateway.defaultTurnType, default: v(GATEWAY_DEFAULTS.defaultTurnType) },
  GATEWAY_BODY_LIMIT_BYTES: { set: '1000', at: (b) => b.gateway.bodyLimitBytes, default: v(GATEWAY_DEFAULTS.bodyLimitBytes) },
  GATEWAY_GENERATION_TIMEOUT_MS: {
    set: '1000',
    at: (b) => b.gateway.generationTimeoutMs,
    default: v(GATEWAY_DEFAULTS.generationTimeoutMs),
  },
  GATEWAY_SHARE_SESSIONS: { set: 'off', at: (b) => b.gateway.shareSessions, is: false, default: v(GATEWAY_DEFAULTS.shareSessions) },
  GATEWAY_SESSION_SHARE_WINDOW_MS: {
    set: '0',
    at: (b) => b.gateway.sessionShareWindowMs,
    default: v(GATEWAY_DEFAULTS.sessionShareWindowMs),
  },
  LLAMA_CONTEXT_SIZE: {
    set: '2048',
    at: (b) => b.gateway.llama?.contextSize,
    default: { says: `at most ${LLAMA_ENGINE_DEFAULTS.maxContextSize}`, value: undefined },
  },
  LLAMA_PARALLEL: { set: '4', at: (b) => b.gateway.llama?.parallel, default: v(LLAMA_ENGINE_DEFAULTS.parallel) },
  LLAMA_BATCHING: { set: 'shared', at: (b) => b.gateway.llama?.batching, default: v(LLAMA_ENGINE_DEFAULTS.batching) },
  LLAMA_THREADS: { set: '3', at: (b) => b.gateway.llama?.threads, default: { says: 'half the cores', value: undefined } },
  LLAMA_TEMPERATURE: { set: '1.2', at: (b) => b.gateway.llama?.temperature, default: v(LLAMA_ENGINE_DEFAULTS.temperature) },
  LLAMA_TOP_P: { set: '0.5', at: (b) => b.gateway.llama?.topP, default: v(LLAMA_ENGINE_DEFAULTS.topP) },
  LLAMA_MAX_TOKENS: { set: '64', at: (b) => b.gateway.llama?.defaultMaxTokens, default: v(LLAMA_ENGINE_DEFAULTS.defaultMaxTokens) },
  LLAMA_GPU: { set: 'off', at: (b) => b.gateway.llama?.gpu, is: false, default: v(LLAMA_ENGINE_DEFAULTS.gpu) },
  // learning from tasks
  TRAJECTORY_SETTLE_MS: { set: '100', at: (b) => b.processors.trajectoryAssembler.settleMs, default: v(DEFAULT_SETTLE_MS) },
  GRPO_NORMALIZE_STD: {
    set: '0',
    at: (b) => b.processors.groupBuilder.normalizeStd,
    is: false,
    default: v(GROUP_BUILDER_DEFAULTS.normalizeStd),
  },
  GRPO_BATCH_TIMEOUT_MS: {
    set: '100',
    at: (b) => b.processors.groupBuilder.batchTimeoutMs,
    default: v(GROUP_BUILDER_DEFAULTS.batchTimeoutMs),
  },
  // training backend
  TFJS_BACKEND: { set: 'wasm', at: (b) => b.config.tfjs.backend, default: v(STACK_DEFAULTS.tfjsBackend) },
  TURNSTREAM_NATIVE_DIR: {
    set: '/n',
    at: (b) => b.config.tfjs.nativeDir,
    default: { says: '$XDG_CACHE_HOME/turnstream/native', value: join(homedir(), '.cache', 'turnstream', 'native') },
  },
  XDG_CACHE_HOME: {
    set: '/x',
    at: (b) => b.config.tfjs.nativeDir,
    is: '/x/turnstream/native',
    default: { says: '~/.cache', value: join(homedir(), '.cache', 'turnstream', 'native') },
  },
  TFJS_GPU: { set: 'off', at: (b) => b.config.tfjs.gpu, default: v(STACK_DEFAULTS.tfjsGpu) },
  TURNSTREAM_SYSTEM_PROMPT: {
    set: 'Be brief.',
    at: (b) => b.config.llama.systemPrompt,
    default: { says: "the catalog's", value: undefined },
  },
  UPSTREAM_BASE_URL: { set: 'http://up/v1', at: (b) => b.upstream?.baseUrl, default: { says: 'unset', value: undefined } },
  UPSTREAM_MODEL: {
    set: 'big',
    with: { UPSTREAM_BASE_URL: 'http://up/v1' },
    at: (b) => b.upstream?.model,
    default: { says: 'unset', value: undefined },
  },
  UPSTREAM_API_KEY: {
    set: 'uk',
    with: { UPSTREAM_BASE_URL: 'http://up/v1' },
    at: (b) => b.upstream?.apiKey,
    default: { says: 'unset', value: undefined },
  },
  // processors
  PROCESSOR_CONCURRENCY: {
    set: '16',
    at: (b) => b.processors.common.concurrency,
    default: { says: '`64`; `4096` for the batch stages', value: undefined },
  },
  PROCESSOR_SESSION_TIMEOUT_MS: {
    set: '5000',
    at: (b) => b.processors.common.sessionTimeoutMs ?? PROCESSOR_DEFAULTS.sessionTimeoutMs,
    default: v(PROCESSOR_DEFAULTS.sessionTimeoutMs),
  },
  SESSION_IDLE_TIMEOUT_MS: {
    set: '100',
    at: (b) => b.processors.sessionAssembler.idleTimeoutMs,
    default: v(SESSION_ASSEMBLER_DEFAULTS.idleTimeoutMs),
  },
  SESSION_END_POLICY: { set: 'drop', at: (b) => b.processors.sessionAssembler.endPolicy, default: v(SESSION_ASSEMBLER_DEFAULTS.endPolicy) },
  FEEDBACK_GRACE_MS: {
    set: '0',
    at: (b) => b.processors.sessionAssembler.feedbackGraceMs,
    default: v(SESSION_ASSEMBLER_DEFAULTS.feedbackGraceMs),
  },
  JUDGE_BASE_URL: { set: 'http://j/v1', at: (b) => b.processors.judge.baseUrl, default: { says: 'unset', value: undefined } },
  JUDGE_MODEL: { set: 'big-judge', at: (b) => b.processors.judge.model, default: v(JUDGE_DEFAULTS.model) },
  JUDGE_API_KEY: { set: 'jk', at: (b) => b.processors.judge.apiKey, default: { says: 'unset', value: undefined } },
  JUDGE_VOTES: { set: '5', at: (b) => b.processors.judge.votes, default: v(JUDGE_DEFAULTS.votes) },
  JUDGE_HINT_VOTES: { set: '2', at: (b) => b.processors.judge.hintVotes, default: v(JUDGE_DEFAULTS.hintVotes) },
  JUDGE_TIMEOUT_MS: { set: '100', at: (b) => b.processors.judge.timeoutMs, default: v(JUDGE_DEFAULTS.timeoutMs) },
  TEACHER_BASE_URL: { set: 'http://t/v1', at: (b) => b.teacher?.baseUrl, default: { says: 'the upstream engine', value: undefined } },
  TEACHER_MODEL: {
    set: 'tm',
    with: { TEACHER_BASE_URL: 'http://t/v1' },
    unsetWith: {},
    at: (b) => b.teacher?.model,
    default: { says: 'the upstream engine', value: undefined },
  },
  TEACHER_API_KEY: {
    set: 'tk',
    with: { TEACHER_BASE_URL: 'http://t/v1' },
    unsetWith: {},
    at: (b) => b.teacher?.apiKey,
    default: { says: 'the upstream engine', value: undefined },
  },
  TEACHER_TOP_K: { set: '4', at: (b) => b.processors.sampleBuilder.topK, default: v(SAMPLE_BUILDER_DEFAULTS.topK) },
  // analytics
  CLICKHOUSE_DATABASE: { set: 'a', at: (b) => b.sink.analytics.database, default: v(ANALYTICS_DEFAULTS.database) },
  CLICKHOUSE_USER: {
    set: 'u',
    at: (b) => b.sink.analytics.username,
    default: { says: 'unset', value: undefined },
  },
  CLICKHOUSE_PASSWORD: { set: 'p', at: (b) => revealed(b.analytics.password), default: { says: 'unset', value: undefined } },
  CLICKHOUSE_PASSWORD_FILE: {
    set: PASSWORD_FILE,
    at: (b) => revealed(b.sink.analytics.password),
    is: 'from-a-file',
    default: { says: 'unset', value: undefined },
  },
  CLICKHOUSE_CA_FILE: {
    set: CA,
    at: (b) => b.sink.analytics.tls?.setting,
    is: `CLICKHOUSE_CA_FILE=${CA}`,
    default: { says: "Node's trusted roots", value: undefined },
  },
  CLICKHOUSE_TABLE_PREFIX: {
    set: 'x_',
    at: (b) => b.sink.analytics.tablePrefix,
    default: { says: 'empty', value: ANALYTICS_DEFAULTS.tablePrefix },
  },
  SINK_GROUP_ID: {
    set: 'g',
    at: (b) => b.sink.groupId,
    default: { says: `\`\${TURNSTREAM_TOPIC_PREFIX}${SINK_DEFAULTS.groupSuffix}\``, value: SINK_DEFAULTS.groupSuffix },
  },
  SINK_BATCH_ROWS: { set: '7', at: (b) => b.sink.batchRows, default: v(SINK_DEFAULTS.batchRows) },
  SINK_MAX_BUFFERED_ROWS: {
    set: '70',
    at: (b) => b.sink.maxBufferedRows,
    default: { says: `${SINK_DEFAULTS.bufferedBatches} × \`SINK_BATCH_ROWS\``, value: undefined },
  },
  SINK_FLUSH_MS: { set: '9', at: (b) => b.sink.flushIntervalMs, default: v(SINK_DEFAULTS.flushIntervalMs) },
  SINK_REPLAY_TAGS: { set: 'a,b', at: (b) => b.sink.replayTags, is: ['a', 'b'], default: v(SINK_DEFAULTS.replayTags) },
  SINK_REPLAY_DISCOVERY_MS: { set: '0', at: (b) => b.sink.replayDiscoveryMs, default: v(SINK_DEFAULTS.replayDiscoveryMs) },
  // learner
  TRAIN_BATCH_SIZE: { set: '4', at: (b) => b.lora.options.batch?.batchSize, default: v(LEARNER_DEFAULTS.batchSize) },
  TRAIN_MAX_STALENESS: { set: '5', at: (b) => b.lora.options.batch?.maxStaleness, default: v(LEARNER_DEFAULTS.maxStaleness) },
  TRAIN_STALENESS: { set: 'tis', at: (b) => b.lora.options.batch?.staleness, default: v(LEARNER_DEFAULTS.staleness) },
  TRAIN_MAX_USER_SHARE: { set: '0.25', at: (b) => b.lora.options.batch?.maxUserShare, default: v(LEARNER_DEFAULTS.maxUserShare) },
  TRAIN_MAX_WAIT_MS: { set: '100', at: (b) => b.lora.options.batch?.maxWaitMs, default: v(LEARNER_DEFAULTS.maxWaitMs) },
  TRAIN_LR: {
    set: '5e-4',
    at: (b) => b.lora.options.optimizer?.lr,
    default: { lora: LEARNER_FAMILY_DEFAULTS.lora.lr, builtin: LEARNER_FAMILY_DEFAULTS.builtin.lr },
  },
  TRAIN_CONSENSUS: { set: 'off', at: (b) => b.lora.options.consensus, is: false, default: v(LEARNER_DEFAULTS.consensus) },
  TRAIN_KL_COEF: {
    set: '0.1',
    at: (b) => step(b).klCoef,
    default: { lora: LEARNER_FAMILY_DEFAULTS.lora.klCoef, builtin: LEARNER_FAMILY_DEFAULTS.builtin.klCoef },
  },
  TRAIN_REWARD_BASELINE: {
    set: '0.5',
    at: (b) => lora(b).rewardBaseline,
    default: { lora: LEARNER_FAMILY_DEFAULTS.lora.rewardBaseline, builtin: LEARNER_FAMILY_DEFAULTS.builtin.rewardBaseline },
  },
  TRAIN_REWARD_BASELINE_PRIOR: {
    set: '-0.5',
    at: (b) => lora(b).rewardBaselinePrior,
    default: { lora: LEARNER_FAMILY_DEFAULTS.lora.rewardBaselinePrior, builtin: LEARNER_FAMILY_DEFAULTS.builtin.rewardBaselinePrior },
  },
  TRAIN_PLEASED_DAMPING: { set: '0.5', at: (b) => lora(b).pleasedDamping, default: v(LEARNER_FAMILY_DEFAULTS.lora.pleasedDamping) },
  TRAIN_OPD_ON_BASE: { set: 'on', at: (b) => step(b).opdOnReference ?? false, is: true, default: v(LEARNER_DEFAULTS.opdOnBase) },
  TRAIN_OPD_ADVANTAGE: {
    set: 'centered',
    at: (b) => step(b).opdAdvantage,
    default: { lora: LEARNER_FAMILY_DEFAULTS.lora.opdAdvantage, builtin: LEARNER_FAMILY_DEFAULTS.builtin.opdAdvantage },
  },
  TRAIN_ENTROPY_COEF: { set: '0.01', at: (b) => step(b).entropyCoef, default: v(LEARNER_DEFAULTS.entropyCoef) },
  TRAIN_LORA_RANK: { set: '4', at: (b) => b.lora.lineage?.lora?.rank, default: v(LEARNER_DEFAULTS.loraRank) },
  TRAIN_LORA_ALPHA: { set: '8', at: (b) => b.lora.lineage?.lora?.alpha, default: v(LEARNER_DEFAULTS.loraAlpha) },
  TRAIN_LORA_TARGETS: { set: 'q,v', at: (b) => b.lora.lineage?.lora?.targets, is: ['q', 'v'], default: v(LEARNER_DEFAULTS.loraTargets) },
  TRAIN_LORA_LAST_LAYERS: { set: '2', at: (b) => b.lora.lineage?.lora?.lastLayers, default: v(LEARNER_DEFAULTS.loraLastLayers) },
  TRAIN_MAX_TOKENS: { set: '256', at: (b) => b.lora.lineage?.maxTrainTokens, default: v(LEARNER_DEFAULTS.maxTrainTokens) },
  TRAIN_MIN_SAMPLES: {
    set: '3',
    at: (b) => b.lora.options.batch?.minSamples,
    default: { lora: LEARNER_FAMILY_DEFAULTS.lora.minSamples, builtin: LEARNER_FAMILY_DEFAULTS.builtin.minSamples },
  },
  TRAIN_MAX_KL: { set: '0.05', at: (b) => step(b).maxKl, default: { lora: LEARNER_FAMILY_DEFAULTS.lora.maxKl, builtin: undefined } },
  TRAIN_MISMATCH_TIS: { set: 'off', at: (b) => step(b).mismatchTis, is: false, default: v(LEARNER_DEFAULTS.mismatchTis) },
  TRAINER_METRICS_PORT: { set: '9464', at: (b) => b.config.train.metricsPort, default: { says: '`0` (off)', value: 0 } },
};

/** Each documented variable and its default cell (the share of it that is the variable's, in a row naming several). */
function documented(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8').split('\n')) {
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.length < 3) continue;
    const names = [...cells[0].matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]);
    if (names.length === 0) continue;
    const parts = cells[1].split(/,\s(?![^(]*\))/);
    names.forEach((name, i) => out.set(name, parts.length === names.length ? parts[i] : cells[1]));
  }
  return out;
}

const TRUE = new Set(['true', '1', 'on']);
const FALSE = new Set(['false', '0', 'off']);

/** A page literal (backquoted, or a bare word) as the module value it stands for. */
function matches(literal: string, value: unknown): boolean {
  if (typeof value === 'number') return Number(literal) === value;
  if (typeof value === 'boolean') return (value ? TRUE : FALSE).has(literal);
  if (value === false) return FALSE.has(literal);
  if (Array.isArray(value)) return literal === value.join(',');
  return literal === String(value);
}

/** The default the page gives, checked against the module's. */
function checkPage(name: string, cell: string, d: Default): void {
  const literals = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
  if ('says' in d) return assert.ok(cell.includes(d.says), `${name}: the page's default "${cell}" says ${JSON.stringify(d.says)}`);
  if ('lora' in d) {
    for (const [family, word] of [
      ['lora', 'LoRA'],
      ['builtin', 'built-in'],
    ] as const) {
      const value = d[family];
      const m = new RegExp(`\`([^\`]+)\`[^,;\`]*?${word}`).exec(cell);
      if (value === undefined) assert.ok(!m || !cell.includes(word), `${name}: no ${word} default on the page, none in the module`);
      else assert.ok(m && matches(m[1], value), `${name}: the page's ${word} default in "${cell}" is the module's ${String(value)}`);
    }
    return;
  }
  const lit = literals[0] ?? cell.split(/\s/)[0];
  assert.ok(matches(lit, d.value), `${name}: the page's default "${cell}" is the module's ${JSON.stringify(d.value)}`);
}

/** What arrives with nothing set: the module default (a family's: the LoRA one; the learner is built on a GGUF model). */
const moduleValue = (d: Default): unknown => ('lora' in d ? d.lora : d.value);

test('every variable in docs/configuration.md has a row here, and every row a variable there', () => {
  const page = [...documented().keys()].sort();
  assert.ok(page.length > 80, `the page's variables were found (${page.length})`);
  assert.deepEqual(
    page.filter((n) => !ROWS[n]),
    [],
    'documented, without a row in this test',
  );
  assert.deepEqual(
    Object.keys(ROWS).filter((n) => !page.includes(n)),
    [],
    'a row here, not on the page',
  );
});

test('each variable reaches the option it names, and its default on the page is the module DEFAULTS', () => {
  const page = documented();
  for (const [name, row] of Object.entries(ROWS)) {
    const cell = page.get(name);
    assert.ok(cell !== undefined, name);
    checkPage(name, cell, row.default);
    const none = built(row.unsetWith ?? row.with ?? {});
    assert.deepEqual(row.at(none), moduleValue(row.default), `${name}: unset, the option is the module default`);
    const expected = row.is ?? (row.set.trim() !== '' && !Number.isNaN(Number(row.set)) ? Number(row.set) : row.set);
    const got = row.at(built({ ...row.with, [name]: row.set }));
    assert.deepEqual(got, expected, `${name}=${row.set} reaches its option`);
    assert.notDeepEqual(got, row.at(none), `${name}=${row.set} changes its option`);
  }
});

test('the built-in model family takes its own defaults from the same tables', () => {
  const b = built({}).builtin;
  assert.equal(b.settings.lr, LEARNER_FAMILY_DEFAULTS.builtin.lr);
  assert.equal(b.settings.minSamples, LEARNER_FAMILY_DEFAULTS.builtin.minSamples);
  assert.equal(b.options.step?.maxKl, undefined);
  assert.equal(b.options.step?.klCoef, LEARNER_FAMILY_DEFAULTS.builtin.klCoef);
  assert.equal(b.lineage, undefined, 'the built-in model trains its own checkpoints');
});
