import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import type { LlamaConfig } from '../../../policy/llama/llama-config.ts';
import { TfLlamaModel } from '../../../policy/llama/llama-model.ts';
import { LoraAdapter, type LoraConfig } from '../../../policy/llama/lora.ts';
import { onEachBackend } from '../../support/on-each-backend.ts';
import { syntheticConfig, syntheticSource } from '../../support/synthetic-llama.ts';

const ids = [3, 17, 4, 42, 8, 8, 1, 30, 12, 5];
const positions = [5, 6, 7, 8];

/** Σ logits·R for a fixed random R: a scalar whose gradient reaches every logit. */
async function objective(model: TfLlamaModel, lora: LoraAdapter, R: tf.Tensor2D): Promise<number> {
  const logits = model.logitsAt(ids, positions, lora);
  const v = tf.tidy(() => tf.sum(tf.mul(logits, R)).dataSync()[0]);
  logits.dispose();
  return v;
}

const variants: Array<[string, Partial<LlamaConfig>]> = [
  ['llama (adjacent-pair rope, GQA, tied head)', {}],
  [
    'qwen2 (NeoX rope, q/k/v biases, separate head)',
    { architecture: 'qwen2', ropeType: 'neox', attentionBias: true, tiedEmbeddings: false },
  ],
  [
    'qwen3 (q/k norm, partial rope, frequency factors)',
    { architecture: 'qwen3', ropeType: 'neox', qkNorm: true, ropeDim: 2, ropeFreqFactors: true },
  ],
];

/** A rank-2 adapter on every projection. */
const ALL_TARGETS: Partial<LoraConfig> = { rank: 2, alpha: 4, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] };

/**
 * A synthetic model of `over` with a LoRA adapter (seed 7) whose B is not zero, so that A's
 * gradient is not trivially 0; `dispose` frees both.
 */
async function withNonZeroLora(over: Partial<LlamaConfig>, adapter = ALL_TARGETS) {
  const config = syntheticConfig(over);
  const model = await TfLlamaModel.load(config, syntheticSource(config));
  const lora = LoraAdapter.init(config, adapter, 7);
  for (const v of lora.variables) v.assign(tf.randomNormal(v.shape, 0, 0.2, 'float32', 11));
  const dispose = (): void => {
    lora.dispose();
    model.dispose();
  };
  return { config, model, lora, dispose };
}

/** The gradients of one train pass (`keepBytes` 0: every layer recomputed) against finite differences. */
async function checkGradients(over: Partial<LlamaConfig>, keepBytes?: number): Promise<void> {
  const { config, model, lora, dispose } = await withNonZeroLora(over);
  const R = tf.randomNormal([positions.length, config.vocabSize], 0, 1, 'float32', 3) as tf.Tensor2D;
  const pass = model.trainPass(ids, positions, lora, { keepBytes });
  const grads = pass.backward(R);
  pass.dispose();
  let checked = 0;
  for (const [i, v] of lora.variables.entries()) {
    const g = await grads[i].data();
    const base = await v.data();
    for (const j of [0, Math.floor(v.size / 2), v.size - 1]) {
      const eps = 3e-3;
      const bump = (delta: number): void => {
        const next = Float32Array.from(base);
        next[j] += delta;
        v.assign(tf.tensor(next, v.shape));
      };
      bump(eps);
      const up = await objective(model, lora, R);
      bump(-eps);
      const down = await objective(model, lora, R);
      bump(0);
      const fd = (up - down) / (2 * eps);
      assert.ok(Math.abs(fd - g[j]) <= 2e-2 + 2e-2 * Math.abs(fd), `${v.name}[${j}]: backward ${g[j]}, finite difference ${fd}`);
      checked++;
    }
  }
  assert.equal(checked, lora.variables.length * 3);
  tf.dispose([...grads, R]);
  dispose();
}

// Native TensorFlow runs a hand-written backward pass on kept intermediates (or on a layer run again
// past the memory budget); wasm recomputes each layer under tf.grads with its own custom gradients.
onEachBackend((backend) => {
  for (const [name, over] of variants) {
    test(`LoRA gradients of the backward pass match finite differences: ${name}`, () => checkGradients(over));
  }
  if (backend === 'tensorflow') {
    test('past the memory budget every layer runs again and the gradients still match: llama', () => checkGradients({}, 0));
    test('several rows in one pass (right-padded) give each row’s logits and the sum of their gradients, as separate passes do', async () => {
      for (const over of variants.map(([, o]) => o)) {
        const { config, model, lora, dispose } = await withNonZeroLora(over);
        const seqs = [
          { ids, positions },
          { ids: [5, 9, 2, 7], positions: [1, 2] },
          { ids: ids.slice(0, 7).reverse(), positions: [0, 3, 6] },
        ];
        const dls = seqs.map((s, i) => tf.randomNormal([s.positions.length, config.vocabSize], 0, 1, 'float32', 20 + i) as tf.Tensor2D);
        const batched = model.trainPassRows(seqs, lora);
        const bLogits = await Promise.all(batched.logits.map((l) => l.array()));
        const bGrads = await Promise.all(batched.backward(dls).map((g) => g.data()));
        batched.dispose();
        const sum = lora.variables.map((v) => new Float32Array(v.size));
        for (const [i, s] of seqs.entries()) {
          const one = model.trainPass(s.ids, s.positions, lora);
          const logits = (await one.logits.array()) as number[][];
          logits.forEach((row, r) =>
            row.forEach((v, c) => assert.ok(Math.abs(v - (bLogits[i] as number[][])[r][c]) < 1e-4, `logit ${i}/${r}/${c}`)),
          );
          (await Promise.all(one.backward(dls[i]).map((g) => g.data()))).forEach((g, k) => g.forEach((v, j) => (sum[k][j] += v)));
          one.dispose();
        }
        sum.forEach((g, k) =>
          g.forEach((v, j) => assert.ok(Math.abs(v - bGrads[k][j]) <= 1e-4 + 1e-3 * Math.abs(v), `${lora.variables[k].name}[${j}]`)),
        );
        tf.dispose(dls);
        dispose();
      }
    });
    test('a backward pass after passes of many other lengths (their tables evicted this one’s) gives the same gradients', async () => {
      const { config, model, lora, dispose } = await withNonZeroLora({ layers: 2 }, { rank: 2, alpha: 4 });
      const R = tf.randomNormal([positions.length, config.vocabSize], 0, 1, 'float32', 3) as tf.Tensor2D;
      const grads = async (evict: boolean): Promise<Float32Array[]> => {
        const pass = model.trainPass(ids, positions, lora);
        if (evict) for (let T = 1; T < ids.length; T++) tf.dispose(model.logitsAt(ids.slice(0, T), [T - 1], lora));
        const g = pass.backward(R);
        pass.dispose();
        const out = await Promise.all(g.map((t) => t.data() as Promise<Float32Array>));
        tf.dispose(g);
        return out;
      };
      const quiet = await grads(false);
      const evicted = await grads(true);
      assert.deepEqual(evicted, quiet);
      tf.dispose(R);
      dispose();
    });
  }
  test('a fresh adapter leaves the model exactly at the base; only the last layers carry modules when asked', async () => {
    const config = syntheticConfig({ layers: 3 });
    const model = await TfLlamaModel.load(config, syntheticSource(config));
    const lora = LoraAdapter.init(config, { lastLayers: 1 });
    assert.deepEqual(lora.layers, [2]);
    assert.equal(lora.firstLayer, 2);
    const a = await model.tokenLogprobs(ids, positions, null);
    const b = await model.tokenLogprobs(ids, positions, lora);
    assert.deepEqual(a, b);
    assert.ok(a.every((x) => Number.isFinite(x) && x < 0));
    lora.dispose();
    model.dispose();
  });
});
