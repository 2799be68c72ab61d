/**
 * The trainer's tfjs forward pass and llama.cpp agree on tiny Llama-family GGUFs the project
 * writes itself, with and without a LoRA adapter the trainer wrote, for each architecture.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { loadTfLlama, LoraAdapter, writeLoraAdapter, writeTinyModel, type TinyModelOptions } from '../../../policy/index.ts';
import { llamaLogProbs } from '../../support/llama-logprobs.ts';
import { onEachBackend } from '../../support/on-each-backend.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';

const dir = suiteTempDir('agree-');

/** Mean and max |Δ log p| of the actual next tokens, and how often the argmax agrees. */
function compare(tfRows: number[][], cpp: Float64Array[], ids: number[]): { mean: number; max: number; argmax: number } {
  let sum = 0;
  let max = 0;
  let agree = 0;
  for (let t = 0; t < ids.length - 1; t++) {
    const d = Math.abs(tfRows[t][ids[t + 1]] - cpp[t][ids[t + 1]]);
    sum += d;
    max = Math.max(max, d);
    const am = (row: ArrayLike<number>) => {
      let b = 0;
      for (let i = 1; i < row.length; i++) if (row[i] > row[b]) b = i;
      return b;
    };
    if (am(tfRows[t]) === am(cpp[t])) agree++;
  }
  return { mean: sum / (ids.length - 1), max, argmax: agree / (ids.length - 1) };
}

const cases: Array<[string, TinyModelOptions]> = [
  ['llama', { architecture: 'llama' }],
  ['llama, Q8_0 weights', { architecture: 'llama', weightType: 'Q8_0' }],
  ['qwen2', { architecture: 'qwen2' }],
  ['qwen3, separate head', { architecture: 'qwen3', tiedEmbeddings: false }],
];

async function agree(name: string, options: TinyModelOptions): Promise<void> {
  const tiny = await writeTinyModel(join(dir(), `${name.replace(/\W+/g, '-')}.gguf`), { ...options, seed: 3 });
  const { model, config, architecture } = await loadTfLlama(tiny.path);
  const { imStart, imEnd } = tiny.special;
  const ids = [imStart, 10, 40, 70, 100, 130, 160, 190, imEnd, imStart, 20, 50, 80, 110, 140, 170, 200, 230, 260, imEnd];
  const positions = ids.slice(0, -1).map((_, i) => i);
  const rows = (lora: LoraAdapter | null): number[][] =>
    tf.tidy(() => tf.logSoftmax(model.logitsAt(ids, positions, lora)).arraySync() as number[][]);

  const base = compare(rows(null), await llamaLogProbs(tiny.path, ids), ids);
  // F32 tiny weights: the engines differ only by accumulation order; quantized ones by llama.cpp's activation quantization.
  const tol = options.weightType === 'Q8_0' ? 0.05 : 0.01;
  assert.ok(base.mean < tol && base.argmax >= 0.9, `base: ${JSON.stringify(base)}`);

  const lora = LoraAdapter.init(config, { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] }, 5);
  for (const v of lora.variables) v.assign(tf.randomNormal(v.shape, 0, 0.5, 'float32', 9));
  const path = join(dir(), `${name.replace(/\W+/g, '-')}.lora.gguf`);
  await writeLoraAdapter(path, { architecture, alpha: lora.config.alpha, pairs: await lora.toPairs() });
  const cppAdapted = await llamaLogProbs(tiny.path, ids, { adapters: [{ filePath: path, scale: 1 }] });
  const adapted = compare(rows(lora), cppAdapted, ids);
  assert.ok(adapted.mean < tol * 2 && adapted.argmax >= 0.9, `with the adapter: ${JSON.stringify(adapted)}`);
  // The adapter really acts: without it tfjs is far from llama.cpp-with-adapter.
  const unadapted = compare(rows(null), cppAdapted, ids);
  assert.ok(unadapted.mean > 10 * adapted.mean, `the adapter moves log-probs: ${JSON.stringify({ adapted, unadapted })}`);
  lora.dispose();
  model.dispose();
}

// The trainer's two backends: native TensorFlow (the default) and wasm (the fallback).
onEachBackend(() => {
  for (const [name, options] of cases) {
    test(`tfjs and llama.cpp agree on next-token log-probs, base and with a trainer-written adapter: ${name}`, () => agree(name, options));
  }
});
