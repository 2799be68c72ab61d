import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MISMATCH_WARN_NATS, mismatchWarning } from '../../../../gym/runner/mismatch-warning.ts';

const step = (absLogprob: number) => ({ absLogprob, kl: absLogprob / 2, truncated: 0, tisMean: 1 });

test('what quantization explains passes without a word; more names the figure and where the causes are', () => {
  assert.equal(mismatchWarning(null), null);
  assert.equal(mismatchWarning(undefined), null);
  // the figures of SmolLM2-135M Q4_1 against the fp32 trainer, rollouts decoded alone
  assert.equal(mismatchWarning(step(0.062)), null);
  assert.equal(mismatchWarning(step(MISMATCH_WARN_NATS)), null);
  assert.equal(mismatchWarning(step(Number.NaN)), null, 'no figure, no claim');
  // what a shared llama.cpp batch gave
  const w = mismatchWarning(step(0.806));
  assert.match(w!, /differ by 0\.81 nats a token/);
  assert.match(w!, /docs\/gym\.md/);
});
