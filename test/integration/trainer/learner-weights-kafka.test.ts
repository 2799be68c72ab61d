/**
 * The learner with `TURNSTREAM_WEIGHTS_TRANSPORT=kafka` (`turnstream train`, the built-in model):
 * each version's checkpoint travels on the weight-blobs topic in the version's own transaction.
 * A learner started on another home (an empty weight store) resumes from the last published
 * version, fetched through Kafka, and trains on; a gateway on a third home serves what it
 * published. Nothing is shared between the three homes.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Kafka } from 'kafkajs';
import { ByteTokenizer, initCheckpoint } from '../../../policy/index.ts';
import type { Sample, WeightVersion } from '../../../schemas/index.ts';
import { createEventCodecs, createKafka, ensureTopics, EventProducer, readToEnd, type EventCodecs } from '../../../streams/index.ts';
import { exampleSample } from '../../support/fixtures.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';
import { startGateway, type StartedGateway } from '../gateway/support.ts';

const TINY = { contextLength: 48, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };
const tok = new ByteTokenizer();
let stack: Awaited<ReturnType<typeof ensureStack>>;
let kafka: Kafka;
let codecs: EventCodecs;
let prefix = '';
const dirs: string[] = [];
let gateway: StartedGateway | undefined;

function sample(i: number): Sample {
  const prompt = [tok.bos, tok.user, ...tok.encode(`q${i}`), tok.end, tok.assistant];
  const resp = [...tok.encode(i % 2 ? 'yes' : 'no'), tok.end];
  return exampleSample({
    sampleId: `t${i}:RL`,
    turnId: `t${i}`,
    sessionId: `s${i % 3}`,
    userId: `u${i % 4}`,
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

async function versions(): Promise<WeightVersion[]> {
  const out: WeightVersion[] = [];
  await readToEnd(kafka, codecs.topic('weights'), async (r) => void out.push(await codecs.of('weights').decode(r.value!)), { idleMs: 500 });
  return out.sort((a, b) => a.version - b.version);
}

/** `turnstream train` on `weightsDir`, publishing through Kafka; stopped (SIGTERM) once `version` is published. */
async function trainUntil(weightsDir: string, version: number): Promise<void> {
  const child: ChildProcess = spawn(process.execPath, ['bin/turnstream.js', 'train', '--backend', 'cpu'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: stack.brokers,
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      TURNSTREAM_TOPIC_PREFIX: prefix,
      TURNSTREAM_WEIGHTS_DIR: weightsDir,
      TURNSTREAM_WEIGHTS_TRANSPORT: 'kafka',
      TURNSTREAM_MODEL: 'builtin',
      TRAIN_BATCH_SIZE: '4',
      TRAIN_MAX_WAIT_MS: '1500',
      TRAIN_MAX_STALENESS: '100',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitFor(`v${version}`, async () => (await versions()).some((v) => v.version === version), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

before(async () => {
  stack = await ensureStack();
  kafka = createKafka({ brokers: [stack.brokers], clientId: 'learner-weights-kafka-test' });
  prefix = uniquePrefix('learner-weights-kafka');
  await ensureTopics(kafka, { naming: { prefix }, partitions: 2 });
  codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
});

after(async () => {
  await gateway?.gw.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  const admin = kafka.admin();
  await admin.connect();
  const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
  await admin.deleteTopics({ topics: mine }).catch(() => undefined);
  await admin.disconnect();
});

const home = async (name: string): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), `ts-weights-${name}-`));
  dirs.push(dir);
  return dir;
};

test(
  'versions travel through Kafka: a learner on a new home resumes from them, a gateway on a third home serves them',
  { timeout: 400_000 },
  async () => {
    const producer = new EventProducer(kafka, codecs);
    await producer.connect();
    const send = (from: number) =>
      producer.sendAll(
        Array.from({ length: 4 }, (_, j) => ({ id: 'samples' as const, key: `s${(from + j) % 3}`, value: sample(from + j) })),
      );

    // Home A: version 1.
    const homeA = await home('trainer-a');
    await initCheckpoint(homeA, { config: TINY });
    await send(0);
    await trainUntil(homeA, 1);
    const [v1] = await versions();
    assert.equal(v1.uri, `kafka://${codecs.topic('weightBlobs')}/turnstream-tiny/1`);

    // Home B, empty: the learner fetches v1 through Kafka and trains v2 on top of it.
    const homeB = await home('trainer-b');
    await send(4);
    await trainUntil(homeB, 2);
    const all = await versions();
    assert.deepEqual(
      all.map((v) => [v.version, v.parentVersion, v.metrics.steps]),
      [
        [1, 0, 1],
        [2, 1, 2],
      ],
      'v2 was trained on v1, steps counted across the move',
    );
    assert.equal(all[1].uri, `kafka://${codecs.topic('weightBlobs')}/turnstream-tiny/2`);
    assert.deepEqual(await readdir(join(homeB, 'turnstream-tiny', 'v1')).then((f) => f.sort()), ['model.json', 'weights.bin']);

    // Home C: a gateway with its own store serves v2.
    const homeC = await home('gateway-c');
    gateway = await startGateway({
      home: homeC,
      kafka: { brokers: stack.brokers.split(','), registryUrl: stack.registryUrl, naming: { prefix } },
    });
    await waitFor('the gateway serving v2', () => gateway!.gw.policies!.version === 2, { timeoutMs: 60_000, intervalMs: 20 });
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'turnstream-tiny', max_tokens: 4, messages: [{ role: 'user', content: 'q1' }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-policy-version'), '2');
    await producer.disconnect();
  },
);
