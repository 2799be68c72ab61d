import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { describeRule, loadConfig, SettingsReader } from '../../../cli/config.ts';
import { TurnstreamError } from '../../../core/errors.ts';

const CWD = mkdtempSync(join(tmpdir(), 'config-'));
const load = (env: Record<string, string>) => loadConfig(env, CWD);

/** The error loadConfig throws for `env`. */
function rejection(env: Record<string, string>): TurnstreamError {
  try {
    load(env);
  } catch (err) {
    assert.ok(err instanceof TurnstreamError, `a TurnstreamError, got ${String(err)}`);
    return err;
  }
  assert.fail(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('gives every setting a default that works on one machine', () => {
    const c = load({});
    assert.deepEqual(c, {
      kafkaBrokers: undefined,
      schemaRegistryUrl: undefined,
      clickhouseUrl: undefined,
      security: { kafka: undefined, registry: undefined },
      home: resolve(CWD, '.turnstream'),
      javaHome: undefined,
      host: '127.0.0.1',
      weightsDir: resolve(CWD, '.turnstream', 'weights'),
      weightsTransport: 'file',
      modelId: undefined,
      trainMethod: 'combined',
      logLevel: 'info',
      logMaxBytes: 52_428_800,
      logKeep: 3,
      topicPrefix: '',
      model: {
        spec: 'smollm2-135m',
        cacheDir: resolve(CWD, '.turnstream', 'models'),
        hfEndpoint: 'https://huggingface.co',
        hfToken: undefined,
      },
      metricsKey: undefined,
      dashboardKey: undefined,
      llama: {
        contextSize: undefined,
        parallel: 2,
        batching: 'separate',
        threads: undefined,
        temperature: 0.3,
        topP: 0.9,
        maxTokens: 512,
        systemPrompt: undefined,
        gpu: 'auto',
      },
      grpo: { settleMs: 30_000, normalizeStd: true, batchTimeoutMs: 300_000 },
      tfjs: { backend: 'auto', nativeDir: join(homedir(), '.cache', 'turnstream', 'native'), gpu: 'auto' },
      gateway: {
        port: 30000,
        apiKeys: [],
        serviceKeys: [],
        defaultTurnType: 'main',
        bodyLimitBytes: 4 * 1024 * 1024,
        generationTimeoutMs: 300_000,
        shareSessions: true,
        sessionShareWindowMs: 1_800_000,
        maxConcurrentGenerations: 8,
        maxQueuedGenerations: 64,
        queueTimeoutMs: 30_000,
        streamStallTimeoutMs: 30_000,
        streamBufferBytes: 1_048_576,
        outboxReadyMaxDepth: 10_000,
        outboxStallMs: 60_000,
        captureWaitMs: 1000,
      },
      upstream: { baseUrl: undefined, apiKey: undefined, model: undefined },
      processor: { concurrency: undefined, sessionTimeoutMs: undefined },
      session: { idleTimeoutMs: 1_800_000, endPolicy: 'masked', feedbackGraceMs: 5000 },
      judge: { baseUrl: undefined, model: 'judge', apiKey: undefined, votes: 3, hintVotes: 1, timeoutMs: 60_000 },
      teacher: { baseUrl: undefined, model: undefined, apiKey: undefined, topK: 0 },
      clickhouse: { database: 'turnstream', username: undefined, password: undefined, tls: undefined, tablePrefix: '' },
      sink: {
        groupId: 'turnstream-clickhouse-sink',
        batchRows: 500,
        maxBufferedRows: undefined,
        flushMs: 500,
        replayTags: 'all',
        replayDiscoveryMs: 10_000,
      },
      train: {
        batchSize: 16,
        maxStaleness: 2,
        staleness: 'drop',
        maxUserShare: 0.5,
        maxWaitMs: 30_000,
        lr: undefined,
        consensus: true,
        klCoef: undefined,
        rewardBaseline: undefined,
        rewardBaselinePrior: undefined,
        pleasedDamping: undefined,
        opdOnBase: false,
        opdAdvantage: undefined,
        entropyCoef: 0,
        loraRank: 8,
        loraAlpha: 16,
        loraTargets: ['q', 'k', 'v', 'o'],
        loraLastLayers: 0,
        maxTrainTokens: 1024,
        minSamples: undefined,
        maxKl: undefined,
        mismatchTis: true,
        tisCap: 2,
        grpoKlCoef: 0,
        grpoTokenMean: 'batch',
        metricsPort: 0,
      },
    });
  });

  it('blank values count as unset', () => {
    const c = load({ PORT: '', TRAIN_BATCH_SIZE: '  ', TRAIN_METHOD: '', GATEWAY_BODY_LIMIT_BYTES: '' });
    assert.equal(c.gateway.port, 30000);
    assert.equal(c.train.batchSize, 16);
    assert.equal(c.trainMethod, 'combined');
    assert.equal(c.gateway.bodyLimitBytes, 4 * 1024 * 1024, "the gateway's own default");
  });

  it('reads the shared settings', () => {
    const c = load({
      KAFKA_BROKERS: 'k:9092',
      SCHEMA_REGISTRY_URL: 'http://r:8081',
      CLICKHOUSE_URL: 'http://c:8123',
      TURNSTREAM_HOME: '/srv/ts',
      JAVA_HOME: '/opt/jdk',
      HOST: '0.0.0.0',
      TURNSTREAM_MODEL_ID: 'mine',
      TRAIN_METHOD: 'OPD',
      LOG_LEVEL: 'warn',
      TURNSTREAM_LOG_MAX_BYTES: '1048576',
      TURNSTREAM_LOG_KEEP: '5',
      TURNSTREAM_TOPIC_PREFIX: 't1.',
      TURNSTREAM_WEIGHTS_TRANSPORT: 'Kafka',
    });
    assert.equal(c.weightsTransport, 'kafka');
    assert.equal(c.kafkaBrokers, 'k:9092');
    assert.equal(c.schemaRegistryUrl, 'http://r:8081');
    assert.equal(c.clickhouseUrl, 'http://c:8123');
    assert.equal(c.home, '/srv/ts');
    assert.equal(c.weightsDir, '/srv/ts/weights', 'the weight store follows the home');
    assert.equal(c.javaHome, '/opt/jdk');
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.modelId, 'mine');
    assert.equal(c.trainMethod, 'opd', 'choices are case-insensitive');
    assert.equal(c.logLevel, 'warn');
    assert.equal(c.logMaxBytes, 1_048_576);
    assert.equal(c.logKeep, 5);
    assert.equal(c.topicPrefix, 't1.');
    assert.equal(c.sink.groupId, 't1.turnstream-clickhouse-sink', 'the sink group follows the topic prefix');
    assert.equal(load({ TURNSTREAM_WEIGHTS_DIR: 'w' }).weightsDir, resolve(CWD, 'w'));
    assert.equal(c.model.cacheDir, '/srv/ts/models', 'the models cache follows the home');
  });

  it('reads the model settings', () => {
    const c = load({
      TURNSTREAM_MODEL: ' hf:org/repo/x.gguf ',
      TURNSTREAM_MODELS_DIR: 'm',
      HF_ENDPOINT: 'https://mirror.example',
      HF_TOKEN: 'hf_x',
    });
    assert.deepEqual(c.model, {
      spec: 'hf:org/repo/x.gguf',
      cacheDir: resolve(CWD, 'm'),
      hfEndpoint: 'https://mirror.example',
      hfToken: 'hf_x',
    });
    assert.equal(load({ TURNSTREAM_MODEL: 'builtin' }).model.spec, 'builtin');
  });

  it('reads the gateway and upstream settings', () => {
    const c = load({
      PORT: '0',
      TURNSTREAM_API_KEYS: ' a:alice, b ,,',
      DEFAULT_TURN_TYPE: 'side',
      GATEWAY_BODY_LIMIT_BYTES: '1048576',
      GATEWAY_GENERATION_TIMEOUT_MS: '5000',
      GATEWAY_SHARE_SESSIONS: 'off',
      GATEWAY_SESSION_SHARE_WINDOW_MS: '60000',
      TURNSTREAM_SERVICE_KEYS: 'svc:frontend',
      TURNSTREAM_METRICS_KEY: ' mk ',
      TURNSTREAM_DASHBOARD_KEY: 'dk',
      GATEWAY_MAX_CONCURRENT_GENERATIONS: '2',
      GATEWAY_MAX_QUEUED_GENERATIONS: '0',
      GATEWAY_QUEUE_TIMEOUT_MS: '1000',
      GATEWAY_STREAM_STALL_TIMEOUT_MS: '2000',
      GATEWAY_STREAM_BUFFER_BYTES: '65536',
      GATEWAY_OUTBOX_READY_MAX_DEPTH: '5',
      GATEWAY_OUTBOX_STALL_MS: '3000',
      GATEWAY_CAPTURE_WAIT_MS: '250',
      UPSTREAM_BASE_URL: 'http://up/v1',
      UPSTREAM_API_KEY: 'sk',
      UPSTREAM_MODEL: 'big',
    });
    assert.deepEqual(c.gateway, {
      port: 0,
      apiKeys: ['a:alice', 'b'],
      defaultTurnType: 'side',
      bodyLimitBytes: 1_048_576,
      generationTimeoutMs: 5000,
      shareSessions: false,
      sessionShareWindowMs: 60_000,
      serviceKeys: ['svc:frontend'],
      maxConcurrentGenerations: 2,
      maxQueuedGenerations: 0,
      queueTimeoutMs: 1000,
      streamStallTimeoutMs: 2000,
      streamBufferBytes: 65_536,
      outboxReadyMaxDepth: 5,
      outboxStallMs: 3000,
      captureWaitMs: 250,
    });
    assert.deepEqual([c.metricsKey, c.dashboardKey], ['mk', 'dk']);
    assert.throws(() => load({ GATEWAY_MAX_CONCURRENT_GENERATIONS: '0' }), /GATEWAY_MAX_CONCURRENT_GENERATIONS/);
    assert.deepEqual(c.upstream, { baseUrl: 'http://up/v1', apiKey: 'sk', model: 'big' });
  });

  it('reads the processor, session, judge and teacher settings', () => {
    const c = load({
      PROCESSOR_CONCURRENCY: '8',
      PROCESSOR_SESSION_TIMEOUT_MS: '7000',
      SESSION_IDLE_TIMEOUT_MS: '60000',
      SESSION_END_POLICY: 'Drop',
      FEEDBACK_GRACE_MS: '0',
      JUDGE_BASE_URL: 'http://j/v1',
      JUDGE_MODEL: 'qwen',
      JUDGE_API_KEY: 'jk',
      JUDGE_VOTES: '5',
      JUDGE_HINT_VOTES: '2',
      JUDGE_TIMEOUT_MS: '1500',
      TEACHER_BASE_URL: 'http://t/v1',
      TEACHER_MODEL: 'teach',
      TEACHER_API_KEY: 'tk',
      TEACHER_TOP_K: '20',
    });
    assert.deepEqual(c.processor, { concurrency: 8, sessionTimeoutMs: 7000 });
    assert.deepEqual(c.session, { idleTimeoutMs: 60_000, endPolicy: 'drop', feedbackGraceMs: 0 });
    assert.deepEqual(c.judge, { baseUrl: 'http://j/v1', model: 'qwen', apiKey: 'jk', votes: 5, hintVotes: 2, timeoutMs: 1500 });
    assert.deepEqual(c.teacher, { baseUrl: 'http://t/v1', model: 'teach', apiKey: 'tk', topK: 20 });
  });

  it('reads the ClickHouse and sink settings', () => {
    const c = load({
      CLICKHOUSE_DATABASE: 'analytics',
      CLICKHOUSE_USER: 'u',
      CLICKHOUSE_PASSWORD: 'p',
      CLICKHOUSE_TABLE_PREFIX: 'x_',
      SINK_GROUP_ID: 'my-sink',
      SINK_BATCH_ROWS: '100',
      SINK_MAX_BUFFERED_ROWS: '20000',
      SINK_FLUSH_MS: '250',
      SINK_REPLAY_TAGS: 'judge-b, judge_c,judge-b',
      SINK_REPLAY_DISCOVERY_MS: '0',
    });
    const { password, ...clickhouse } = c.clickhouse;
    assert.deepEqual(clickhouse, { database: 'analytics', username: 'u', tls: undefined, tablePrefix: 'x_' });
    assert.equal(password?.reveal(), 'p');
    assert.equal(String(password), '[secret from CLICKHOUSE_PASSWORD]');
    assert.deepEqual(c.sink, {
      groupId: 'my-sink',
      batchRows: 100,
      maxBufferedRows: 20_000,
      flushMs: 250,
      replayTags: ['judge-b', 'judge_c'],
      replayDiscoveryMs: 0,
    });
    assert.equal(load({ SINK_REPLAY_TAGS: 'ALL' }).sink.replayTags, 'all');
    assert.deepEqual(load({ SINK_REPLAY_TAGS: 'none' }).sink.replayTags, []);
  });

  it('reads the learner settings', () => {
    const c = load({
      TRAIN_BATCH_SIZE: '4',
      TRAIN_MAX_STALENESS: '100',
      TRAIN_STALENESS: 'tis',
      TRAIN_MAX_USER_SHARE: '1',
      TRAIN_MAX_WAIT_MS: '1500',
      TRAIN_LR: '3e-4',
      TRAIN_CONSENSUS: 'off',
      TRAIN_KL_COEF: '0.1',
      TRAIN_REWARD_BASELINE: '0.3',
      TRAIN_REWARD_BASELINE_PRIOR: '-1',
      TRAIN_PLEASED_DAMPING: '0.5',
      TRAIN_OPD_ON_BASE: 'on',
      TRAIN_OPD_ADVANTAGE: 'centered',
      TRAIN_ENTROPY_COEF: '0.01',
      TRAINER_METRICS_PORT: '9464',
      TRAIN_LORA_RANK: '16',
      TRAIN_LORA_ALPHA: '32',
      TRAIN_LORA_TARGETS: 'q,v,gate',
      TRAIN_LORA_LAST_LAYERS: '8',
      TRAIN_MAX_TOKENS: '256',
      TRAIN_MIN_SAMPLES: '4',
      TRAIN_MAX_KL: '0.05',
      TRAIN_MISMATCH_TIS: 'off',
    });
    assert.deepEqual(c.train, {
      batchSize: 4,
      maxStaleness: 100,
      staleness: 'tis',
      maxUserShare: 1,
      maxWaitMs: 1500,
      lr: 3e-4,
      consensus: false,
      klCoef: 0.1,
      rewardBaseline: 0.3,
      rewardBaselinePrior: -1,
      pleasedDamping: 0.5,
      opdOnBase: true,
      opdAdvantage: 'centered',
      entropyCoef: 0.01,
      loraRank: 16,
      loraAlpha: 32,
      loraTargets: ['q', 'v', 'gate'],
      loraLastLayers: 8,
      maxTrainTokens: 256,
      minSamples: 4,
      maxKl: 0.05,
      mismatchTis: false,
      tisCap: 2,
      grpoKlCoef: 0,
      grpoTokenMean: 'batch',
      metricsPort: 9464,
    });
    for (const on of ['1', 'true', 'YES', 'on']) assert.equal(load({ TRAIN_CONSENSUS: on }).train.consensus, true, on);
    for (const off of ['0', 'false', 'no', 'OFF']) assert.equal(load({ TRAIN_CONSENSUS: off }).train.consensus, false, off);
  });

  const bad: Array<[string, string, RegExp]> = [
    ['PORT', '70000', /an integer >= 0 and <= 65535/],
    ['LLAMA_TEMPERATURE', '3', /a number >= 0 and <= 2/],
    ['LLAMA_GPU', 'cuda', /one of auto, off/],
    ['LLAMA_BATCHING', 'unified', /one of separate, shared/],
    ['TFJS_BACKEND', 'webgl', /one of auto, tensorflow-gpu, tensorflow, wasm, cpu/],
    ['TFJS_GPU', 'yes', /one of auto, off/],
    ['LLAMA_CONTEXT_SIZE', '10', /an integer >= 64/],
    ['TRAIN_LORA_TARGETS', 'q,x', /a comma-separated list of q, k, v, o, gate, up, down/],
    ['TRAIN_MAX_KL', '0', /a number > 0/],
    ['PORT', 'http', /an integer >= 0 and <= 65535/],
    ['TRAIN_METHOD', 'ppo', /one of rl, opd, combined/],
    ['TURNSTREAM_WEIGHTS_TRANSPORT', 's3', /one of file, kafka/],
    ['DEFAULT_TURN_TYPE', 'aside', /one of main, side/],
    ['LOG_LEVEL', 'verbose', /one of fatal, error, warn, info, debug, trace, silent/],
    ['TURNSTREAM_LOG_MAX_BYTES', '50MiB', /an integer >= 1/],
    ['TURNSTREAM_LOG_KEEP', '0', /an integer >= 1/],
    ['GATEWAY_BODY_LIMIT_BYTES', '4MiB', /an integer >= 1/],
    ['SINK_REPLAY_TAGS', 'a.b', /"all", "none" or tags/],
    ['SINK_REPLAY_TAGS', ',', /"all", "none" or tags/],
    ['PROCESSOR_SESSION_TIMEOUT_MS', '1.5', /an integer >= 1/],
    ['SESSION_IDLE_TIMEOUT_MS', '0', /a number > 0/],
    ['SESSION_END_POLICY', 'keep', /one of masked, drop/],
    ['FEEDBACK_GRACE_MS', '-5', /a number >= 0/],
    ['JUDGE_VOTES', '0', /an integer >= 1/],
    ['JUDGE_HINT_VOTES', 'two', /an integer >= 1/],
    ['JUDGE_TIMEOUT_MS', '-100', /a number > 0/],
    ['TEACHER_TOP_K', '-1', /an integer >= 0/],
    ['GATEWAY_SHARE_SESSIONS', 'sometimes', /one of 1, true/],
    ['GATEWAY_SESSION_SHARE_WINDOW_MS', '-1', /a number >= 0/],
    ['SINK_BATCH_ROWS', '0', /an integer >= 1/],
    ['SINK_MAX_BUFFERED_ROWS', '1.5', /an integer >= 1/],
    ['SINK_FLUSH_MS', '0', /a number > 0/],
    ['SINK_REPLAY_TAGS', 'a.b', /"all", "none" or tags/],
    ['SINK_REPLAY_TAGS', ',', /"all", "none" or tags/],
    ['SINK_REPLAY_DISCOVERY_MS', '-1', /a number >= 0/],
    ['TRAIN_BATCH_SIZE', 'abc', /an integer >= 1/],
    ['TRAIN_BATCH_SIZE', '0', /an integer >= 1/],
    ['TRAIN_MAX_STALENESS', '-1', /an integer >= 0/],
    ['TRAIN_STALENESS', 'keep', /one of drop, tis/],
    ['TRAIN_MAX_USER_SHARE', '0', /a number > 0 and <= 1/],
    ['TRAIN_MAX_USER_SHARE', '1.5', /a number > 0 and <= 1/],
    ['TRAIN_MAX_WAIT_MS', '-1', /a number >= 0/],
    ['TRAIN_LR', '0', /a number > 0/],
    ['TRAIN_LR', 'Infinity', /a number > 0/],
    ['TRAIN_CONSENSUS', 'maybe', /one of 1, true, yes, on, 0, false, no, off/],
    ['TRAIN_KL_COEF', '-0.1', /a number >= 0/],
    ['TRAIN_REWARD_BASELINE', '1.5', /a number >= 0 and <= 1/],
    ['TRAIN_REWARD_BASELINE_PRIOR', '0.5', /a number >= -1 and <= 0/],
    ['TRAIN_PLEASED_DAMPING', '1.5', /a number >= 0 and <= 1/],
    ['TRAIN_OPD_ADVANTAGE', 'half', /one of raw, centered, positive/],
    ['TRAIN_ENTROPY_COEF', 'NaN', /a number >= 0/],
    ['TRAINER_METRICS_PORT', '65536', /an integer >= 0 and <= 65535/],
  ];
  for (const [name, value, allowed] of bad) {
    it(`rejects ${name}=${value}, naming the variable, the value and what is allowed`, () => {
      const err = rejection({ [name]: value });
      assert.equal(err.code, 'TS_ERR_INVALID_INPUT');
      assert.equal(err.retriable, false, 'a bad configuration does not get better by retrying');
      assert.equal(err.param, name);
      assert.ok(err.message.includes(`${name}=${JSON.stringify(value)}`), err.message);
      assert.match(err.message, allowed);
    });
  }

  it('names every bad variable in one error', () => {
    const err = rejection({ TRAIN_BATCH_SIZE: 'abc', JUDGE_VOTES: '0', TRAIN_METHOD: 'ppo', PORT: '8080' });
    assert.equal(err.message.split('; ').length, 3, err.message);
    for (const name of ['TRAIN_BATCH_SIZE', 'JUDGE_VOTES', 'TRAIN_METHOD']) assert.ok(err.message.includes(name), err.message);
    assert.ok(!err.message.includes('PORT'), 'a good value is not reported');
  });

  it('reads a .env file only for process.env', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'config-dotenv-'));
    writeFileSync(join(cwd, '.env'), 'TRAIN_BATCH_SIZE=abc\n');
    assert.equal(loadConfig({}, cwd).train.batchSize, 16);
  });
});

describe('SettingsReader', () => {
  it('describes each rule the way the errors say it', () => {
    assert.equal(describeRule({ integer: true, min: 1 }), 'an integer >= 1');
    assert.equal(describeRule({ above: 0, max: 1 }), 'a number > 0 and <= 1');
    assert.equal(describeRule({}), 'a number');
  });

  it('reads flags too, with the label given', () => {
    const r = new SettingsReader({ '--batch-size': '8', '--lr': 'fast' });
    const v = { batchSize: r.number('--batch-size', 16, { integer: true, min: 1 }), lr: r.optionalNumber('--lr', { above: 0 }) };
    assert.throws(
      () => r.done(v, 'invalid flags'),
      (err: TurnstreamError) => {
        assert.equal(err.message, 'invalid flags: --lr="fast": expected a number > 0');
        assert.equal(err.param, '--lr');
        return true;
      },
    );
  });
});
