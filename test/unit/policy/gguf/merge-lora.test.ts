import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openGguf } from '../../../../policy/gguf/gguf-file.ts';
import { writeLoraAdapter, type LoraPair } from '../../../../policy/gguf/lora-adapter.ts';
import { addLoraDelta, mergeLora } from '../../../../policy/gguf/merge-lora.ts';
import { readRawMetadata } from '../../../../policy/gguf/raw-metadata.ts';
import { writeTinyModel } from '../../../../policy/gguf/tiny-model.ts';
import { TurnstreamError } from '../../../../core/errors.ts';
import { llamaLogProbs, logProbDistance } from '../../../support/llama-logprobs.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-merge-'));
});
after(() => rm(dir, { recursive: true, force: true }));

const TOKENS = [1, 120, 118, 263, 13, 90, 309, 326, 262, 2, 1, 50];

async function adapterFor(basePath: string, path: string, rank: number, alpha: number): Promise<void> {
  const base = await openGguf(basePath);
  let s = 9;
  const rnd = (): number => ((s = (s * 16807) % 2147483647) / 2147483647 - 0.5) * 0.6;
  const pairs: LoraPair[] = base.tensors
    .filter((t) => /attn_(q|v|output)|ffn_down/.test(t.name))
    .map((t) => ({
      target: t.name,
      inFeatures: t.dims[0],
      outFeatures: t.dims[1],
      a: Float32Array.from({ length: rank * t.dims[0] }, rnd),
      b: Float32Array.from({ length: t.dims[1] * rank }, rnd),
    }));
  await writeLoraAdapter(path, { architecture: base.architecture, alpha, pairs, base });
  await base.close();
}

test('addLoraDelta adds s·B·A to a row-major [out][in] weight', () => {
  // in 3, out 2, rank 1: A = [1 2 3], B = [[1], [−2]] → B·A = [[1 2 3], [−2 −4 −6]].
  const w = new Float32Array([1, 1, 1, 0, 0, 0]);
  addLoraDelta(w, { target: 'w', inFeatures: 3, outFeatures: 2, a: new Float32Array([1, 2, 3]), b: new Float32Array([1, -2]) }, 1, 0.5);
  assert.deepEqual([...w], [1.5, 2, 2.5, -1, -2, -3]);
});

test('F32 base: the merged model gives llama.cpp the log-probs of base + adapter (alpha/r scaling included)', async () => {
  const basePath = join(dir, 'base.gguf');
  const adapter = join(dir, 'adapter.gguf');
  const merged = join(dir, 'merged.gguf');
  await writeTinyModel(basePath, { weightType: 'F32', seed: 4 });
  await adapterFor(basePath, adapter, 4, 8); // s = 8 / 4 = 2
  await mergeLora({ base: basePath, adapter, output: merged, type: 'F32' });
  const withAdapter = await llamaLogProbs(basePath, TOKENS, { adapters: [{ filePath: adapter }] });
  const fromMerged = await llamaLogProbs(merged, TOKENS);
  const plain = await llamaLogProbs(basePath, TOKENS);
  assert.ok(logProbDistance(withAdapter, fromMerged).max < 0.01, `max ${logProbDistance(withAdapter, fromMerged).max}`);
  assert.ok(logProbDistance(plain, fromMerged).mean > 0.1, 'the merge changed the model');
  // The per-adapter scale composes with alpha/r the same way in both.
  const half = join(dir, 'merged-half.gguf');
  await mergeLora({ base: basePath, adapter, output: half, type: 'F32', scale: 0.5 });
  const d = logProbDistance(
    await llamaLogProbs(basePath, TOKENS, { adapters: [{ filePath: adapter, scale: 0.5 }] }),
    await llamaLogProbs(half, TOKENS),
  );
  assert.ok(d.max < 0.01, `scale 0.5: max ${d.max}`);
  assert.ok(logProbDistance(fromMerged, await llamaLogProbs(half, TOKENS)).mean > 0.05, 'scale 0.5 is not scale 1');
});

test('quantized base: adapted weights are re-encoded, every other tensor and key/value is copied byte for byte', async () => {
  const basePath = join(dir, 'q-base.gguf');
  const adapter = join(dir, 'q-adapter.gguf');
  const merged = join(dir, 'q-merged.gguf');
  await writeTinyModel(basePath, { weightType: 'Q4_1', seed: 5 });
  await adapterFor(basePath, adapter, 2, 2);
  const result = await mergeLora({ base: basePath, adapter, output: merged, type: 'Q8_0' });
  assert.match(result.sha256, /^[0-9a-f]{64}$/);
  const [b, m] = [await openGguf(basePath), await openGguf(merged)];
  try {
    assert.deepEqual(await readRawMetadata(m), await readRawMetadata(b));
    assert.deepEqual(
      m.tensors.map((t) => [t.name, t.dims]),
      b.tensors.map((t) => [t.name, t.dims]),
    );
    for (const t of m.tensors) {
      const adapted = /attn_(q|v|output)|ffn_down/.test(t.name);
      assert.equal(t.typeName, adapted ? 'Q8_0' : b.tensor(t.name).typeName, t.name);
      if (!adapted) assert.deepEqual(await m.readTensorBytes(t.name), await b.readTensorBytes(t.name), t.name);
    }
  } finally {
    await b.close();
    await m.close();
  }
  // llama.cpp serves it, close to base + adapter (both run quantized, so not to the last digit).
  const d = logProbDistance(
    await llamaLogProbs(basePath, TOKENS, { adapters: [{ filePath: adapter }] }),
    await llamaLogProbs(merged, TOKENS),
  );
  assert.ok(d.mean < 0.2, `mean ${d.mean}`);
});

test('an adapter for another architecture or shape is refused', async () => {
  const llamaBase = join(dir, 'l.gguf');
  const qwenBase = join(dir, 'qw.gguf');
  const wide = join(dir, 'wide.gguf');
  await writeTinyModel(llamaBase, { seed: 1 });
  await writeTinyModel(qwenBase, { architecture: 'qwen2', seed: 1 });
  await writeTinyModel(wide, { hidden: 128, seed: 1 });
  const adapter = join(dir, 'l-adapter.gguf');
  await adapterFor(llamaBase, adapter, 2, 4);
  const invalid = (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT';
  await assert.rejects(mergeLora({ base: qwenBase, adapter, output: join(dir, 'x.gguf') }), invalid);
  await assert.rejects(mergeLora({ base: wide, adapter, output: join(dir, 'y.gguf') }), invalid);
});
