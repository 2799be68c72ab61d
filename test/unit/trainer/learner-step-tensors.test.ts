/**
 * A learner step leaves no tensor behind: a trainer takes thousands of steps, and what one step
 * leaks (a variable's old value kept alive by the tensor it was assigned from, a loss that
 * tf.grads did not free) grows with every step until the process runs out of memory.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { LoraAdapter, TfLlamaModel } from '../../../policy/index.ts';
import { TransformerModel } from '../../../policy/builtin/model.ts';
import { AdamW } from '../../../trainer/adamw.ts';
import { GRPO_STEP } from '../../../trainer/policy-stepper.ts';
import { learnerStep, type LearnerStepOptions } from '../../../trainer/learner-step.ts';
import { LoraTrainable, type TrainablePolicy } from '../../../trainer/trainable-policy.ts';
import { onEachBackend } from '../../support/on-each-backend.ts';
import { rlSample } from '../../support/rl-sample.ts';
import { syntheticConfig, syntheticSource } from '../../support/synthetic-llama.ts';
import { TINY } from '../../support/tfjs-helpers.ts';

const prompt = [1, 7, 9, 11, 2];
const batch = () => [
  { sample: rlSample(prompt, [20, 21, 22], -3, { exactLogprobs: true, teacherPromptTokens: null, reward: 1 }) },
  { sample: rlSample(prompt, [30, 31], -3, { exactLogprobs: true, teacherPromptTokens: null, reward: -1 }) },
];

/** Tensors alive after `steps` more steps than after the first (which creates the optimizer's moments). */
async function growth(policy: TrainablePolicy | TransformerModel, opts: LearnerStepOptions, steps = 4): Promise<number> {
  const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
  try {
    await learnerStep(policy, opt, batch(), opts);
    const before = tf.memory().numTensors;
    for (let i = 0; i < steps; i++) await learnerStep(policy, opt, batch(), opts);
    return tf.memory().numTensors - before;
  } finally {
    opt.dispose();
  }
}

const cases: Array<[string, LearnerStepOptions]> = [
  ['the default step', {}],
  ['a GRPO step with a KL to the base', { ...GRPO_STEP, klCoef: 0.05 }],
  ['a step the KL guard halves, then undoes', { maxKl: 1e-12 }],
];

onEachBackend(() => {
  for (const [name, opts] of cases) {
    test(`LoRA: ${name} leaves no tensor behind`, async () => {
      const config = syntheticConfig({ layers: 2 });
      const model = await TfLlamaModel.load(config, syntheticSource(config));
      const lora = LoraAdapter.init(config, { rank: 4, alpha: 8 }, 1);
      try {
        assert.equal(await growth(new LoraTrainable(model, lora), opts), 0);
      } finally {
        lora.dispose();
        model.dispose();
      }
    });
  }

  test('built-in model: a step leaves no tensor behind', async () => {
    const model = TransformerModel.init({ ...TINY, vocabSize: 64 }, 1);
    try {
      assert.equal(await growth(model, {}), 0);
    } finally {
      model.dispose();
    }
  });
});
