// Our dequantizers against llama.cpp's own: a tiny model whose only quantized tensor is an untied
// token embedding, and its F32 twin holding our decoding of that tensor. llama.cpp reads embedding
// rows by exact dequantization (get_rows), with no activation quantization as in its matrix
// products, so the two models' log-probs agree to float rounding if and only if our decoding of
// every row is ggml's. (A decoder with two nibbles swapped moves them by whole nats.)
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { GgmlType, type GgmlTypeName } from '../../../../policy/gguf/ggml-type.ts';
import { openGguf } from '../../../../policy/gguf/gguf-file.ts';
import { writeGguf } from '../../../../policy/gguf/gguf-writer.ts';
import { readRawMetadata } from '../../../../policy/gguf/raw-metadata.ts';
import { writeTinyModel } from '../../../../policy/gguf/tiny-model.ts';
import { llamaLogProbs, logProbDistance } from '../../../support/llama-logprobs.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-deq-'));
});
after(() => rm(dir, { recursive: true, force: true }));

/** The same model with every tensor decoded by our reader and stored as F32. */
async function f32Twin(src: string, dst: string): Promise<void> {
  const f = await openGguf(src);
  try {
    const tensors = f.tensors.map((t) => ({ name: t.name, dims: t.dims, type: GgmlType.F32, data: () => f.readTensor(t.name) }));
    await writeGguf(dst, { metadata: await readRawMetadata(f), tensors });
  } finally {
    await f.close();
  }
}

// Token ids spread over the vocabulary (specials, bytes, merges), so many embedding rows are read.
const TOKENS = [1, 120, 118, 263, 13, 90, 309, 326, 262, 2, 1, 50, 60, 70, 200, 300, 330];
const TYPES: GgmlTypeName[] = ['F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K'];

for (const type of TYPES) {
  test(`${type}: llama.cpp reading our file and our F32 decoding of it give the same log-probs`, async () => {
    const hidden = type.endsWith('_K') ? 256 : 64; // K-quant rows are whole super-blocks of 256
    const quantized = join(dir, `${type}.gguf`);
    const twin = join(dir, `${type}-twin.gguf`);
    await writeTinyModel(quantized, { hidden, weightType: 'F32', embeddingType: type, tiedEmbeddings: false, seed: 7 });
    await f32Twin(quantized, twin);
    const f = await openGguf(quantized);
    assert.equal(f.tensor('token_embd.weight').typeName, type);
    await f.close();
    const d = logProbDistance(await llamaLogProbs(quantized, TOKENS), await llamaLogProbs(twin, TOKENS));
    assert.ok(d.max < 1e-4, `max |Δ log p| ${d.max}`);
  });
}
