import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openGguf } from '../../../../policy/gguf/gguf-file.ts';
import { writeTinyModel, type TinyArchitecture } from '../../../../policy/gguf/tiny-model.ts';
import { testLlama } from '../../../support/llama-logprobs.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-tiny-'));
});
after(() => rm(dir, { recursive: true, force: true }));

const CHAT =
  '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n';

for (const architecture of ['llama', 'qwen2', 'qwen3'] as TinyArchitecture[]) {
  test(`${architecture}: llama.cpp loads the tiny model, tokenizes ChatML with single special ids, and generates`, async () => {
    const path = join(dir, `${architecture}.gguf`);
    const tiny = await writeTinyModel(path, { architecture, weightType: 'Q8_0', seed: 11 });
    const f = await openGguf(path);
    assert.equal(f.architecture, architecture);
    assert.equal(f.has('output.weight'), false); // tied by default
    assert.equal(f.has('blk.0.attn_q.bias'), architecture === 'qwen2');
    assert.equal(f.has('blk.1.attn_k_norm.weight'), architecture === 'qwen3');
    assert.equal(f.tensor('blk.0.attn_q.weight').typeName, 'Q8_0');
    assert.deepEqual(f.tensor('blk.0.attn_k.weight').dims, [tiny.config.hidden, tiny.config.kvHeads * tiny.config.headDim]);
    await f.close();

    const llama = await testLlama();
    const model = await llama.loadModel({ modelPath: path });
    try {
      const ids = model.tokenize(CHAT, true);
      const { imStart, imEnd } = tiny.special;
      assert.equal(ids.filter((t) => t === imStart).length, 3);
      assert.equal(ids.filter((t) => t === imEnd).length, 2);
      assert.equal(ids[0], imStart);
      assert.equal(model.detokenize(ids, true), CHAT);
      assert.ok(ids.length < Buffer.byteLength(CHAT), 'merges shorten the text');
      // Without special-token parsing the same text is plain bytes.
      assert.ok(model.tokenize('<|im_start|>', false).length > 1);

      const context = await model.createContext({ contextSize: 256, threads: 1 });
      const generated: number[] = [];
      for await (const token of context.getSequence().evaluate(ids, { temperature: 0.8, seed: 1 })) {
        generated.push(token);
        if (generated.length === 8) break;
      }
      assert.equal(generated.length, 8);
      assert.ok(generated.every((t) => Number.isInteger(t) && t >= 0 && t < tiny.config.vocabSize));
      await context.dispose();
    } finally {
      await model.dispose();
    }
  });
}

test('options: untied head, hidden size, seeds (same seed, same bytes; another seed, other weights)', async () => {
  const a = await writeTinyModel(join(dir, 'a.gguf'), { tiedEmbeddings: false, hidden: 96, heads: 6, kvHeads: 3, layers: 3, seed: 5 });
  const b = await writeTinyModel(join(dir, 'b.gguf'), { tiedEmbeddings: false, hidden: 96, heads: 6, kvHeads: 3, layers: 3, seed: 5 });
  const c = await writeTinyModel(join(dir, 'c.gguf'), { tiedEmbeddings: false, hidden: 96, heads: 6, kvHeads: 3, layers: 3, seed: 6 });
  assert.equal(a.sha256, b.sha256);
  assert.notEqual(a.sha256, c.sha256);
  const f = await openGguf(a.path);
  assert.deepEqual(f.tensor('output.weight').dims, [96, a.config.vocabSize]);
  assert.equal(f.has('blk.2.ffn_down.weight'), true);
  const meta = f.metadata as unknown as {
    llama: { attention: { head_count: number; head_count_kv: number } };
    tokenizer: { chat_template: string };
  };
  assert.equal(meta.llama.attention.head_count_kv, 3);
  assert.match(meta.tokenizer.chat_template, /<\|im_start\|>/);
  await f.close();
  const model = await (await testLlama()).loadModel({ modelPath: a.path });
  assert.equal(model.trainContextSize, 512);
  await model.dispose();
});
