import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { TransformerModel, disposeCache, weightShapes } from '../../../../policy/builtin/model.ts';
import { TINY, close } from '../../../support/tfjs-helpers.ts';

const V = 264;

test('forwardLogits has shape [B, T, V] and is causal', () => {
  const m = TransformerModel.init({ ...TINY, vocabSize: V }, 1);
  const [a, b] = tf.tidy(() => {
    const l1 = m.forwardLogits([[1, 2, 3, 4]]);
    const l2 = m.forwardLogits([[1, 2, 3, 99]]);
    assert.deepEqual(l1.shape, [1, 4, V]);
    return [l1.slice([0, 0, 0], [1, 3, -1]).arraySync(), l2.slice([0, 0, 0], [1, 3, -1]).arraySync()];
  });
  assert.deepEqual(a, b, 'changing a later token does not change earlier logits');
  m.dispose();
});

test('weights are named trainable variables; tied and untied heads', () => {
  const tied = TransformerModel.init({ ...TINY, vocabSize: V });
  const untied = TransformerModel.init({ ...TINY, vocabSize: V, tiedEmbeddings: false });
  assert.ok(tied.variables.every((v) => v.trainable));
  assert.equal(tied.variables.length, weightShapes(tied.config).length);
  assert.ok(!tied.weights.has('head.w'));
  assert.deepEqual(untied.weights.get('head.w')!.shape, [TINY.dModel, V]);
  tied.dispose();
  untied.dispose();
});

test('the same seed gives the same init', () => {
  const a = TransformerModel.init({ ...TINY, vocabSize: V }, 7);
  const b = TransformerModel.init({ ...TINY, vocabSize: V }, 7);
  assert.deepEqual(a.weights.get('wte')!.dataSync(), b.weights.get('wte')!.dataSync());
  a.dispose();
  b.dispose();
});

test('the KV cache gives the same logits as a full forward pass', () => {
  const m = TransformerModel.init({ ...TINY, vocabSize: V }, 2);
  const ids = [256, 5, 17, 200, 3, 9];
  const full = tf.tidy(() => Array.from(m.forwardLogits([ids]).dataSync()));
  const first = m.forwardWithCache(tf.tensor2d([ids.slice(0, 4)], undefined, 'int32'), null);
  const second = m.forwardWithCache(tf.tensor2d([ids.slice(4)], undefined, 'int32'), first.cache);
  const cached = [...first.logits.dataSync(), ...second.logits.dataSync()];
  for (let i = 0; i < full.length; i++) close(cached[i], full[i], 1e-4);
  for (const t of [first.logits, second.logits]) t.dispose();
  disposeCache(first.cache);
  disposeCache(second.cache);
  m.dispose();
});

test('tokenLogprobs are ≤ 0, masked to 0, differentiable, and a training step lowers the NLL', () => {
  const m = TransformerModel.init({ ...TINY, vocabSize: V }, 3);
  const input = tf.tensor2d([[256, 10, 11, 12]], undefined, 'int32');
  const target = tf.tensor2d([[10, 11, 12, 262]], undefined, 'int32');
  const mask = tf.tensor2d([[1, 1, 1, 0]]);
  const lp = m.tokenLogprobs(input, target, mask);
  const v = Array.from(lp.dataSync());
  lp.dispose();
  assert.ok(v.slice(0, 3).every((x) => x <= 0));
  assert.equal(v[3], 0);
  const nll = (): tf.Scalar => tf.neg(tf.sum(m.tokenLogprobs(input, target, mask))) as tf.Scalar;
  const before = tf.tidy(() => nll().dataSync()[0]);
  const opt = tf.train.adam(1e-2);
  for (let i = 0; i < 5; i++)
    tf.tidy(() => {
      opt.minimize(nll, false, m.variables);
    });
  const after = tf.tidy(() => nll().dataSync()[0]);
  assert.ok(after < before, `NLL ${before} → ${after}`);
  opt.dispose();
  for (const t of [input, target, mask]) t.dispose();
  m.dispose();
});

test('no tensor leaks across forward, logprob and gradient calls', () => {
  const m = TransformerModel.init({ ...TINY, vocabSize: V }, 4);
  const input = tf.tensor2d([[256, 1, 2]], undefined, 'int32');
  const mask = tf.ones([1, 3]) as tf.Tensor2D;
  const once = (): void => {
    tf.tidy(() => {
      m.forwardLogits(input);
    });
    m.tokenLogprobs(input, input, mask).dispose();
    const { grads, value } = tf.variableGrads(() => tf.sum(m.tokenLogprobs(input, input, mask)) as tf.Scalar, m.variables);
    value.dispose();
    tf.dispose(grads);
  };
  once();
  const before = tf.memory().numTensors;
  for (let i = 0; i < 3; i++) once();
  assert.equal(tf.memory().numTensors, before);
  input.dispose();
  mask.dispose();
  m.dispose();
});

test('invalid configs and over-long inputs are input errors', () => {
  assert.throws(() => TransformerModel.init({ ...TINY, vocabSize: V, nHeads: 3 }), { code: 'TS_ERR_INVALID_INPUT' });
  const m = TransformerModel.init({ ...TINY, vocabSize: V });
  assert.throws(() => m.forwardLogits([new Array(TINY.contextLength + 1).fill(1)]), { code: 'TS_ERR_INVALID_INPUT' });
  m.dispose();
});
