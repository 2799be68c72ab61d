import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openGguf, type GgufFile } from '../../../../policy/gguf/gguf-file.ts';
import { readLoraAdapter, writeLoraAdapter, type LoraPair } from '../../../../policy/gguf/lora-adapter.ts';
import { writeTinyModel } from '../../../../policy/gguf/tiny-model.ts';
import { TurnstreamError } from '../../../../core/errors.ts';
import { llamaLogProbs, logProbDistance } from '../../../support/llama-logprobs.ts';
import { suiteTempDir } from '../../../support/temp-dir.ts';

const dir = suiteTempDir('ts-lora-');
let basePath: string;
let base: GgufFile;
before(async () => {
  basePath = join(dir(), 'base.gguf');
  await writeTinyModel(basePath, { weightType: 'Q4_1', seed: 3 }); // quantized, as SmolLM2 is
  base = await openGguf(basePath);
});
after(async () => {
  await base.close();
});

const TOKENS = [1, 120, 118, 263, 13, 90, 309, 326, 262, 2, 1, 50];

/** Random pairs (rank r) on q and v of every layer; `zeroB` makes a LoRA that changes nothing. */
function pairs(rank: number, seed: number, zeroB = false): LoraPair[] {
  let s = seed;
  const rnd = (): number => ((s = (s * 16807) % 2147483647) / 2147483647 - 0.5) * 0.8;
  const out: LoraPair[] = [];
  for (const t of base.tensors.filter((t) => /^blk\.\d+\.attn_[qv]\.weight$/.test(t.name))) {
    const [inFeatures, outFeatures] = t.dims;
    const a = Float32Array.from({ length: rank * inFeatures }, rnd);
    const b = Float32Array.from({ length: outFeatures * rank }, zeroB ? () => 0 : rnd);
    out.push({ target: t.name, inFeatures, outFeatures, a, b });
  }
  return out;
}

test('an adapter llama.cpp loads changes the next-token distribution; a zero B changes nothing', async () => {
  const adapter = join(dir(), 'a.gguf');
  const zero = join(dir(), 'zero.gguf');
  await writeLoraAdapter(adapter, { architecture: 'llama', alpha: 16, pairs: pairs(4, 1), base });
  await writeLoraAdapter(zero, { architecture: 'llama', alpha: 16, pairs: pairs(4, 1, true), base, type: 'F16' });
  const plain = await llamaLogProbs(basePath, TOKENS);
  const adapted = await llamaLogProbs(basePath, TOKENS, { adapters: [{ filePath: adapter, scale: 1 }] });
  const noop = await llamaLogProbs(basePath, TOKENS, { adapters: [{ filePath: zero, scale: 1 }] });
  const moved = logProbDistance(plain, adapted);
  assert.ok(moved.mean > 0.1, `mean |Δ log p| with the adapter ${moved.mean}`);
  assert.ok(logProbDistance(plain, noop).max < 1e-4, 'a zero adapter is a no-op');
  // Scale 0 at load time switches the same adapter off.
  assert.ok(logProbDistance(plain, await llamaLogProbs(basePath, TOKENS, { adapters: [{ filePath: adapter, scale: 0 }] })).max < 1e-4);
});

test('the file holds what llama.cpp expects, and reads back', async () => {
  const path = join(dir(), 'b.gguf');
  const written = pairs(8, 2);
  await writeLoraAdapter(path, { architecture: 'llama', alpha: 16, pairs: written, name: 'v1' });
  const f = await openGguf(path);
  const meta = f.metadata as unknown as { general: Record<string, unknown>; adapter: { type: string; lora: { alpha: number } } };
  assert.equal(meta.general.architecture, 'llama');
  assert.equal(meta.general.type, 'adapter');
  assert.equal(meta.general.name, 'v1');
  assert.equal(meta.adapter.type, 'lora');
  assert.equal(meta.adapter.lora.alpha, 16);
  const q = base.tensor('blk.0.attn_q.weight');
  assert.deepEqual(f.tensor('blk.0.attn_q.weight.lora_a').dims, [q.dims[0], 8]); // a.ne0 = base.ne0
  assert.deepEqual(f.tensor('blk.0.attn_q.weight.lora_b').dims, [8, q.dims[1]]); // b.ne1 = base.ne1
  const back = await readLoraAdapter(f);
  assert.equal(back.rank, 8);
  assert.equal(back.alpha, 16);
  assert.equal(back.pairs.size, written.length);
  assert.deepEqual(
    back.pairs.get('blk.1.attn_v.weight'),
    written.find((p) => p.target === 'blk.1.attn_v.weight'),
  );
  await f.close();
  await assert.rejects(readLoraAdapter(base), (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT');
});

test('inconsistent pairs are refused before anything is written', async () => {
  const ok = pairs(4, 3)[0];
  const invalid = (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT';
  const write = (p: LoraPair[]) => writeLoraAdapter(join(dir(), 'bad.gguf'), { architecture: 'llama', alpha: 8, pairs: p, base });
  await assert.rejects(write([]), invalid);
  await assert.rejects(write([{ ...ok, target: 'token_embd.weight' }]), invalid);
  await assert.rejects(write([{ ...ok, b: ok.b.subarray(1) }]), invalid);
  await assert.rejects(write([ok, { ...pairs(2, 3)[1] }]), invalid); // ranks differ
  await assert.rejects(write([{ ...ok, target: 'blk.9.attn_q.weight' }]), invalid);
  // attn_v is [64, 32]: a pair for its transpose does not fit.
  const v = pairs(4, 3).find((p) => p.target === 'blk.0.attn_v.weight')!;
  const transposed = {
    ...v,
    inFeatures: v.outFeatures,
    outFeatures: v.inFeatures,
    a: new Float32Array(4 * v.outFeatures),
    b: new Float32Array(v.inFeatures * 4),
  };
  await assert.rejects(write([transposed]), invalid);
});
