/**
 * Weights that travel (issue 44 item 4), on the real Kafka and registry with the real llama.cpp
 * gateway on a tiny GGUF the test writes. The trainer side has a home of its own; each gateway
 * has another (its own copy of the base model, an empty weight store), and nothing is shared but
 * Kafka:
 *
 * - the trainer publishes version 1 as the learner does (its files in pieces on the weight-blobs
 *   topic, then the WeightVersion naming them, in one transaction); a running gateway fetches it
 *   and serves a turn with X-Policy-Version 1 — the time from the commit to that turn is reported;
 * - a gateway started after version 2 was published catches up, and a pinned `tiny@1` it never
 *   fetched is fetched on demand;
 * - a version with a corrupted piece (its bytes no longer match its sha256) is refused with a
 *   line naming the piece, the gateway keeps serving the version before, and the next good
 *   version swaps in.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import * as tf from '@tensorflow/tfjs';
import { createLogger } from '../../../core/index.ts';
import type { Gateway } from '../../../gateway/index.ts';
import {
  llamaConfigOf,
  LoraAdapter,
  openGguf,
  selectBackend,
  sha256File,
  WeightTransport,
  writeTinyModel,
  type TinyModel,
} from '../../../policy/index.ts';
import type { WeightChunk, WeightVersion } from '../../../schemas/index.ts';
import { ensureTopics, Transactions } from '../../../streams/index.ts';
import { createLlamaGateway } from '../../support/llama-gateway.ts';
import { storeLoraVersion } from '../../support/lora-version.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';
import { testKafka, type TestKafka } from './support.ts';

let root = '';
let k: TestKafka;
let tiny: TinyModel;
let trainer: WeightTransport;
let tx: Transactions;
const gateways: Gateway[] = [];
/** Error lines of every gateway, for the refusal's message. */
const errors: string[] = [];
const trainerWeights = () => join(root, 'trainer', 'weights');

before(async () => {
  await selectBackend('wasm');
  root = await mkdtemp(join(tmpdir(), 'weights-kafka-'));
  k = await testKafka(await ensureStack(), uniquePrefix('weights-kafka'));
  await ensureTopics(k.kafka, { naming: k.naming, partitions: 3, ids: ['weightBlobs'] });
  await mkdir(join(root, 'trainer'));
  tiny = await writeTinyModel(join(root, 'trainer', 'tiny.gguf'), { architecture: 'llama', seed: 7 });
  // Small pieces, so that the tiny adapter (~14 KB) travels in several.
  trainer = new WeightTransport({
    weightsDir: trainerWeights(),
    chunkBytes: 4096,
    connection: async () => ({ kafka: k.kafka, codecs: k.codecs }),
  });
  tx = new Transactions({ kafka: k.kafka, transactionalId: `${k.naming.prefix}trainer`, logger: createLogger('trainer-test', 'warn') });
  await tx.connect();
});

after(async () => {
  for (const gw of gateways) await gw.stop().catch(() => undefined);
  await tx?.disconnect();
  if (k) {
    const admin = k.kafka.admin();
    await admin.connect();
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(k.naming.prefix!));
    await admin.deleteTopics({ topics: mine }).catch(() => undefined);
    await admin.disconnect();
  }
  await rm(root, { recursive: true, force: true });
});

/**
 * The trainer's side of a version, as the learner does it: the adapter written into the trainer's
 * store, its files' pieces and then the WeightVersion naming them committed in one transaction.
 * `corrupt` flips a byte of one piece after its sha256 was taken. Resolves with the commit's time.
 */
async function publish(version: number, seed: number, corrupt = false): Promise<{ wv: WeightVersion; committedAt: number }> {
  const file = await openGguf(tiny.path);
  const config = llamaConfigOf(file);
  await file.close();
  const lora = LoraAdapter.init(config, { rank: 4, alpha: 8 }, seed);
  for (const x of lora.variables) x.assign(tf.randomNormal(x.shape, 0, 0.6, 'float32', seed));
  const { ref, wv: local } = await storeLoraVersion(
    trainerWeights(),
    { modelId: 'tiny', version, base: { name: 'tiny', sha256: tiny.sha256 }, lora: lora.config },
    await lora.toPairs(),
  );
  lora.dispose();
  const createdAt = Date.now();
  const { uri, outputs } = await trainer.publication('tiny', version, ref.uri);
  assert.ok(outputs.length >= 4, `the adapter travels in several pieces (${outputs.length})`);
  if (corrupt) {
    const codec = k.codecs.of('weightBlobs');
    const piece: WeightChunk = await codec.decode(outputs[1].value!);
    const data = Buffer.from(piece.data);
    data[100] ^= 0xff;
    outputs[1] = { ...outputs[1], value: codec.encodeNow({ ...piece, data }) };
  }
  const wv: WeightVersion = { ...local, uri, createdAt };
  const weights = k.codecs.of('weights');
  await tx.commit(() => ({ outputs: [...outputs, { topic: weights.topic, key: 'tiny', value: weights.encodeNow(wv) }] }));
  return { wv, committedAt: Date.now() };
}

/** A gateway on a home of its own: a copy of the base model and an empty weight store. */
async function startGateway(name: string): Promise<{ gw: Gateway; url: string; home: string }> {
  const home = join(root, name);
  await rm(home, { recursive: true, force: true });
  const base = join(await mkdtemp(join(tmpdir(), `weights-kafka-${name}-`)), 'tiny.gguf');
  await copyFile(tiny.path, base);
  const lines = new Writable({
    write(chunk: Buffer, _enc, done) {
      const line = JSON.parse(chunk.toString()) as { level: number; msg: string };
      if (line.level >= 50) errors.push(`${name}: ${line.msg}`);
      done();
    },
  });
  const gw = createLlamaGateway(
    home,
    { name: 'tiny', path: base, sha256: tiny.sha256 },
    { contextSize: 256, parallel: 1, kvCache: false },
    { kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming }, logger: pino({ level: 'warn' }, lines) },
  );
  gateways.push(gw);
  return { gw, url: await gw.start(), home };
}

async function ask(url: string, model = 'tiny'): Promise<{ status: number; version: string | null; content: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, temperature: 0, max_tokens: 8, messages: [{ role: 'user', content: 'hello' }] }),
  });
  const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
  return { status: res.status, version: res.headers.get('x-policy-version'), content: body.choices?.[0]?.message.content ?? '' };
}

let a: { gw: Gateway; url: string; home: string };
let baseAnswer = '';

test(
  'a gateway on its own home serves version 1 after the trainer publishes it through Kafka; no shared files',
  { timeout: 120_000 },
  async (t) => {
    a = await startGateway('gateway-a');
    const first = await ask(a.url);
    assert.equal(first.version, '0', 'an empty store serves the base');
    baseAnswer = first.content;

    const { wv, committedAt } = await publish(1, 1);
    assert.match(wv.uri, /^kafka:\/\/t-weights-kafka-[0-9a-f]+\.turnstream\.weight-blobs\.v1\/tiny\/1$/);
    await waitFor('gateway A serving v1', () => a.gw.llama!.version === 1, { timeoutMs: 60_000, intervalMs: 10 });
    const turn = await ask(a.url);
    const ms = Date.now() - committedAt;
    assert.equal(turn.status, 200);
    assert.equal(turn.version, '1');
    assert.notEqual(turn.content, baseAnswer, 'the adapter changes the answer');
    // The adapter came through Kafka: the gateway's own copy, byte for byte the trainer's.
    const fetched = join(a.home, 'weights', 'tiny', 'v1');
    assert.deepEqual((await readdir(fetched)).sort(), ['adapter.gguf', 'adapter.json']);
    assert.equal(await sha256File(join(fetched, 'adapter.gguf')), wv.sha256);
    assert.ok(!fetched.startsWith(join(root, 'trainer')));
    t.diagnostic(`WeightVersion committed → first turn served by v1 on gateway A: ${ms} ms`);
  },
);

test('a gateway started after the publish catches up, and fetches a pinned version on demand', { timeout: 120_000 }, async (t) => {
  await publish(2, 2);
  await waitFor('gateway A serving v2', () => a.gw.llama!.version === 2, { timeoutMs: 60_000, intervalMs: 10 });
  const t0 = Date.now();
  const b = await startGateway('gateway-b');
  await waitFor('gateway B serving v2', () => b.gw.llama!.version === 2, { timeoutMs: 60_000, intervalMs: 10 });
  const turn = await ask(b.url);
  assert.equal(turn.version, '2');
  t.diagnostic(`gateway B start → first turn served by v2: ${Date.now() - t0} ms`);

  const pinned = await ask(b.url, 'tiny@1');
  assert.equal(pinned.status, 200);
  assert.equal(pinned.version, '1', 'tiny@1 is fetched when asked for');
  assert.ok((await stat(join(b.home, 'weights', 'tiny', 'v1', 'adapter.gguf'))).size > 0);
  assert.equal((await ask(b.url, 'tiny@7')).status, 404, 'a version never published is not found');
});

test(
  'a version with a corrupted piece is refused with a clear error; the gateway keeps serving, and the next version swaps in',
  { timeout: 120_000 },
  async () => {
    await publish(3, 3, true);
    const line = await waitFor('the refusal', () => errors.find((e) => e.startsWith('gateway-a: could not fetch tiny v3')), {
      timeoutMs: 60_000,
    });
    assert.match(
      line,
      /piece 1 of tiny v3 \(adapter\.gguf at byte 4096\) has sha256 [0-9a-f]{64}, its record says [0-9a-f]{64}; still serving the current version/,
    );
    assert.equal(a.gw.llama!.version, 2);
    const turn = await ask(a.url);
    assert.equal(turn.status, 200);
    assert.equal(turn.version, '2');
    await assert.rejects(stat(join(a.home, 'weights', 'tiny', 'v3')), /ENOENT/, 'nothing of v3 is left in the store');

    await publish(4, 4);
    await waitFor('gateway A serving v4', () => a.gw.llama!.version === 4, { timeoutMs: 60_000, intervalMs: 10 });
    assert.equal((await ask(a.url)).version, '4');
  },
);
