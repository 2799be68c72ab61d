import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { selectBackend, selectedBackend } from '../../../policy/tfjs-backend.ts';
import { generate, scoreTokens, type GeneratedToken } from '../../../policy/builtin/generate.ts';
import { TransformerModel } from '../../../policy/builtin/model.ts';
import { ByteTokenizer } from '../../../policy/builtin/tokenizer.ts';
import { TINY, close } from '../../support/tfjs-helpers.ts';

test('without native bindings the default is wasm; preferring cpu switches to cpu', async () => {
  const infos: unknown[] = [];
  const logger = { info: (o: unknown) => infos.push(o), debug: () => {} };
  const chosen = await selectBackend(undefined, { logger });
  assert.ok(['tensorflow-gpu', 'tensorflow', 'wasm'].includes(chosen), chosen);
  assert.equal(selectedBackend(), chosen);
  assert.equal(infos.length, 1, 'the choice is logged once');
  assert.equal(await selectBackend('cpu'), 'cpu');
  assert.equal(tf.getBackend(), 'cpu');
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
