import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import type { Sample, WeightVersion } from '../../../schemas/index.ts';
import { createEventCodecs, createKafka, ensureTopics, EventProducer, readToEnd, type EventCodecs } from '../../../streams/index.ts';
import { ByteTokenizer, initCheckpoint, loadCheckpoint, WeightStore } from '../../../policy/index.ts';
import { exampleSample } from '../../support/fixtures.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { caughtUp } from '../../support/caught-up.ts';
import { waitFor } from '../../support/wait-for.ts';

const TINY = { contextLength: 48, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };
const tok = new ByteTokenizer();
let kafka: Kafka;
let stack: Awaited<ReturnType<typeof ensureStack>>;
const dirs: string[] = [];

function sample(i: number, userId: string): Sample {
  const prompt = [tok.bos, tok.user, ...tok.encode(`q${i}`), tok.end, tok.assistant];
  const resp = [...tok.encode(i % 2 ? 'yes' : 'no'), tok.end];
  return exampleSample({
    sampleId: `t${i}:RL`,
    turnId: `t${i}`,
    sessionId: `s${i % 3}`,
    userId,
    method: 'RL',
    tokens: [...prompt, ...resp],
    promptLength: prompt.length,
    responseLength: resp.length,
    lossMask: resp.map(() => 1),
    rolloutLogprobs: resp.map(() => -5),
    reward: i % 2 ? 1 : -1,
    teacherLogprobs: null,
    teacherTopK: null,
  });
}

async function versions(codecs: EventCodecs): Promise<WeightVersion[]> {
  const out: WeightVersion[] = [];
  await readToEnd(kafka, codecs.topic('weights'), async (r) => void out.push(await codecs.of('weights').decode(r.value!)), { idleMs: 500 });
  return out.sort((a, b) => a.version - b.version);
}

function learner(prefix: string, weightsDir: string): ChildProcess {
  const child = spawn(process.execPath, ['bin/turnstream.js', 'train', '--backend', 'cpu'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: stack.brokers,
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      TURNSTREAM_TOPIC_PREFIX: prefix,
      TURNSTREAM_WEIGHTS_DIR: weightsDir,
      // The tiny built-in checkpoint this test writes, not the default real model.
      TURNSTREAM_MODEL: 'builtin',
      TRAIN_BATCH_SIZE: '4',
      TRAIN_MAX_WAIT_MS: '1500',
      TRAIN_MAX_STALENESS: '100',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

describe('learner on real Kafka', { timeout: 400000 }, () => {
  before(async () => {
    stack = await ensureStack();
    kafka = createKafka({ brokers: [stack.brokers], clientId: 'learner-test' });
  });
  after(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('publishes versions with metrics; after kill -9 it resumes from the last published version and never re-trains a committed batch', async () => {
    const prefix = uniquePrefix('learner');
    await ensureTopics(kafka, { naming: { prefix }, partitions: 2 });
    const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
    const producer = new EventProducer(kafka, codecs);
    await producer.connect();
    const weightsDir = await mkdtemp(join(tmpdir(), 'ts-learner-'));
    dirs.push(weightsDir);
    await initCheckpoint(weightsDir, { config: TINY });

    // Phase 1: 8 samples from 4 users → two full batches → v1, v2.
    await producer.sendAll(
      Array.from({ length: 8 }, (_, i) => ({ id: 'samples' as const, key: `s${i % 3}`, value: sample(i, `u${i % 4}`) })),
    );
    const first = learner(prefix, weightsDir);
    await waitFor('v2', async () => (await versions(codecs)).some((v) => v.version === 2), { timeoutMs: 120_000, intervalMs: 500 });
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const published = await versions(codecs);
    assert.deepEqual(
      published.map((v) => v.version),
      [1, 2],
      'nothing else was published',
    );

    // A crash between writing a checkpoint and publishing it leaves an unpublished folder.
    const store = new WeightStore(weightsDir);
    await cp(store.path('turnstream-tiny', 2), store.path('turnstream-tiny', 3), { recursive: true });

    // Phase 2: 8 more, user "hog" sends 6 of them: capped at 2 per batch of 4.
    const hog = Array.from({ length: 8 }, (_, j) => sample(8 + j, j < 6 ? 'hog' : `u${j}`));
    await producer.sendAll(hog.map((s) => ({ id: 'samples' as const, key: s.sessionId, value: s })));
    const second = learner(prefix, weightsDir);
    try {
      await waitFor('all 16 samples trained', async () => (await versions(codecs)).reduce((a, v) => a + v.metrics.samples, 0) >= 16, {
        timeoutMs: 120_000,
        intervalMs: 500,
      });
      await caughtUp(kafka, `${prefix}turnstream.learner.turnstream-tiny`, [codecs.topic('samples')]);
    } finally {
      second.kill('SIGTERM');
      await new Promise((r) => second.once('exit', r));
    }
    await producer.disconnect();

    const all = await versions(codecs);
    const n = all.length;
    assert.deepEqual(
      all.map((v) => v.version),
      Array.from({ length: n }, (_, i) => i + 1),
      'versions 1..n, each once',
    );
    assert.deepEqual(
      all.map((v) => v.parentVersion),
      Array.from({ length: n }, (_, i) => i),
      'each trained on its predecessor',
    );
    assert.deepEqual(
      all.map((v) => v.metrics.steps),
      Array.from({ length: n }, (_, i) => i + 1),
      'one step per version, counted across the restart',
    );
    assert.equal(
      all.reduce((a, v) => a + v.metrics.samples, 0),
      16,
      'every sample trained exactly once',
    );
    assert.ok(n >= 5, `the user cap split the hog's samples over more batches (got ${n} versions)`);
    for (const v of all) {
      for (const k of ['loss', 'meanReward', 'kl', 'clipFraction', 'logprobDrift'] as const)
        assert.ok(Number.isFinite(v.metrics[k]), `${k} of v${v.version}`);
      assert.ok(v.metrics.tokens > 0 && v.metrics.samples > 0 && v.metrics.samples <= 4);
      assert.equal(v.metrics.droppedStale, 0);
    }
    // v3 is the re-trained one, not the leftover copy of v2.
    const v3 = all.find((v) => v.version === 3)!;
    const { model, manifest } = await loadCheckpoint(v3.uri, { expectedSha256: v3.sha256 });
    model.dispose();
    assert.equal(manifest.parentVersion, 2);
    assert.notEqual(v3.sha256, published[1].sha256);
  });
});
