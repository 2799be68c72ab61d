import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { CHECKPOINT_FORMAT, loadCheckpoint, saveCheckpoint } from '../../../../policy/builtin/checkpoint.ts';
import { TransformerModel } from '../../../../policy/builtin/model.ts';
import { WeightStore, initCheckpoint } from '../../../../policy/builtin/weight-store.ts';
import { TINY } from '../../../support/tfjs-helpers.ts';

const dirs: string[] = [];
const tmp = async (): Promise<string> => {
  const d = await mkdtemp(join(tmpdir(), 'turnstream-ckpt-'));
  dirs.push(d);
  return d;
};
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const ids = [[256, 259, 104, 105, 262, 260]];

test('save → load gives identical logits and the recorded metadata', async () => {
  const weightsDir = await tmp();
  const m = TransformerModel.init({ ...TINY, vocabSize: 264, tiedEmbeddings: false }, 5);
  const saved = await saveCheckpoint(m, { weightsDir, modelId: 'tiny', version: 3, parentVersion: 2, baseModel: 'random-init(seed=5)' });
  assert.equal(saved.uri, join(weightsDir, 'tiny', 'v3'));
  assert.match(saved.sha256, /^[0-9a-f]{64}$/);
  const manifest = JSON.parse(await readFile(join(saved.uri, 'model.json'), 'utf8'));
  assert.equal(manifest.format, CHECKPOINT_FORMAT);
  assert.equal(manifest.parentVersion, 2);
  assert.equal(manifest.config.dModel, TINY.dModel);
  assert.ok(manifest.tensors.some((t: { name: string }) => t.name === 'head.w'));

  for (const uri of [saved.uri, pathToFileURL(saved.uri).href, join(saved.uri, 'model.json')]) {
    const loaded = await loadCheckpoint(uri, { expectedSha256: saved.sha256 });
    const [a, b] = tf.tidy(() => [m.forwardLogits(ids).dataSync(), loaded.model.forwardLogits(ids).dataSync()]);
    assert.deepEqual(b, a);
    assert.equal(loaded.manifest.version, 3);
    loaded.model.dispose();
  }
  m.dispose();
});

test('versions are immutable', async () => {
  const weightsDir = await tmp();
  const m = TransformerModel.init({ ...TINY, vocabSize: 264 });
  await saveCheckpoint(m, { weightsDir, modelId: 'tiny', version: 0 });
  await assert.rejects(saveCheckpoint(m, { weightsDir, modelId: 'tiny', version: 0 }), { code: 'TS_ERR_INVALID_INPUT' });
  m.dispose();
});

test('a tampered weights.bin, a wrong expected sha256 or a wrong shape is CORRUPT_WEIGHTS', async () => {
  const weightsDir = await tmp();
  const m = TransformerModel.init({ ...TINY, vocabSize: 264 });
  const saved = await saveCheckpoint(m, { weightsDir, modelId: 'tiny', version: 0 });
  m.dispose();
  await assert.rejects(loadCheckpoint(saved.uri, { expectedSha256: '0'.repeat(64) }), { code: 'TS_ERR_CORRUPT_WEIGHTS' });

  const bin = join(saved.uri, 'weights.bin');
  const bytes = await readFile(bin);
  bytes[100] ^= 0xff;
  await writeFile(bin, bytes);
  await assert.rejects(loadCheckpoint(saved.uri), { code: 'TS_ERR_CORRUPT_WEIGHTS' });
  bytes[100] ^= 0xff;
  await writeFile(bin, bytes);
  (await loadCheckpoint(saved.uri)).model.dispose();

  const mj = join(saved.uri, 'model.json');
  const manifest = JSON.parse(await readFile(mj, 'utf8'));
  manifest.tensors[0].shape = [264, TINY.dModel + 1];
  await writeFile(mj, JSON.stringify(manifest));
  await assert.rejects(loadCheckpoint(saved.uri), { code: 'TS_ERR_CORRUPT_WEIGHTS' });
  await writeFile(mj, '{not json');
  await assert.rejects(loadCheckpoint(saved.uri), { code: 'TS_ERR_CORRUPT_WEIGHTS' });
  await assert.rejects(loadCheckpoint(join(weightsDir, 'nope', 'v1')), { code: 'TS_ERR_NOT_FOUND' });
});

test('the weight store lists versions, finds the latest, and initCheckpoint is idempotent', async () => {
  const weightsDir = await tmp();
  const store = new WeightStore(weightsDir);
  assert.equal(await store.latest('turnstream-tiny'), null);
  assert.deepEqual(await store.list('turnstream-tiny'), []);
  const v0 = await initCheckpoint(weightsDir, { seed: 1, config: TINY });
  assert.equal(v0.version, 0);
  assert.equal(v0.uri, store.path('turnstream-tiny', 0));
  const again = await initCheckpoint(weightsDir, { seed: 99, config: TINY });
  assert.equal(again.sha256, v0.sha256);

  const { model } = await loadCheckpoint(v0.uri);
  for (const v of [2, 10]) await saveCheckpoint(model, { weightsDir, modelId: 'turnstream-tiny', version: v, parentVersion: 0 });
  model.dispose();
  assert.deepEqual(await store.list('turnstream-tiny'), [0, 2, 10]);
  assert.equal((await store.latest('turnstream-tiny'))!.version, 10);
  assert.throws(() => store.path('../etc', 0), { code: 'TS_ERR_INVALID_INPUT' });
});
