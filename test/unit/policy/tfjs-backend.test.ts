import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { checkBackendResults, detectCudaDevice, selectBackend, selectedBackend } from '../../../policy/index.ts';
import { generate, scoreTokens, type GeneratedToken } from '../../../policy/builtin/generate.ts';
import { TransformerModel } from '../../../policy/builtin/model.ts';
import { ByteTokenizer } from '../../../policy/builtin/tokenizer.ts';
import { TINY, close } from '../../support/tfjs-helpers.ts';

test('a backend asked for is used, and the known-result check passes on it', async () => {
  const infos: unknown[] = [];
  const logger = { info: (o: unknown) => infos.push(o), debug: () => {}, warn: () => assert.fail('no warning when wasm is asked for') };
  assert.equal(await selectBackend('wasm', { logger }), 'wasm');
  assert.equal(selectedBackend(), 'wasm');
  assert.equal(infos.length, 1, 'the choice is logged once');
  assert.ok((await checkBackendResults()).ok);
  assert.equal(await selectBackend('cpu'), 'cpu');
  assert.equal(tf.getBackend(), 'cpu');
  assert.ok((await checkBackendResults()).ok);
});

test('the known-result check catches a backend that computes wrong', async () => {
  // The cpu backend's kernels under another name, with a matMul that is off by 1 %.
  tf.registerBackend('skewed', tf.findBackendFactory('cpu')!);
  for (const k of tf.getKernelsForBackend('cpu')) {
    const kernel =
      k.kernelName === 'BatchMatMul'
        ? { ...k, kernelFunc: ((args: never) => skew(k.kernelFunc(args) as tf.TensorInfo)) as tf.KernelFunc }
        : k;
    tf.registerKernel({ ...kernel, backendName: 'skewed' });
  }
  function skew(out: tf.TensorInfo): tf.TensorInfo {
    const backend = tf.backend() as unknown as { data: { get(id: object): { values: Float32Array } } };
    const values = backend.data.get(out.dataId).values;
    for (let i = 0; i < values.length; i++) values[i] *= 1.01;
    return out;
  }
  await tf.setBackend('skewed');
  const check = await checkBackendResults();
  await tf.setBackend('cpu');
  tf.removeBackend('skewed');
  assert.equal(check.ok, false);
  assert.match(check.detail, /wrong result.*(matMul|gradient)/);
});

test('a CUDA device is told by the NVIDIA driver’s GPU list', async () => {
  const root = await mkdtemp(join(tmpdir(), 'proc-'));
  try {
    assert.equal(detectCudaDevice(root, root).present, false);
    await mkdir(join(root, 'driver', 'nvidia', 'gpus', '0000:01:00.0'), { recursive: true });
    const found = detectCudaDevice(root, root);
    assert.equal(found.present, true);
    assert.match(found.detail, /1 NVIDIA GPU/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('on wasm: generation, scoring and a training step work and agree', async () => {
  assert.equal(await selectBackend('wasm'), 'wasm');
  const tok = new ByteTokenizer();
  const m = TransformerModel.init({ ...TINY, vocabSize: tok.vocabSize }, 1);
  const prompt = [tok.bos, tok.user, ...tok.encode('hey'), tok.end, tok.assistant];
  const out: GeneratedToken[] = [];
  for await (const t of generate(m, prompt, { maxTokens: 16, seed: 2 })) out.push(t);
  const scored = await scoreTokens(
    m,
    prompt,
    out.map((t) => t.id),
  );
  scored.forEach((s, i) => close(s, out[i].logprob, 1e-4));
  const ids = tf.tensor2d([prompt], undefined, 'int32');
  const mask = tf.ones(ids.shape) as tf.Tensor2D;
  const opt = tf.train.adam(1e-3);
  tf.tidy(() => {
    opt.minimize(() => tf.neg(tf.mean(m.tokenLogprobs(ids, ids, mask))) as tf.Scalar, false, m.variables);
  });
  opt.dispose();
  tf.dispose([ids, mask]);
  m.dispose();
});
