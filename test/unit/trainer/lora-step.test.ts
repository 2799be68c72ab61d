/** The learner step on a LoRA adapter over a (small, synthetic) Llama-family model. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LoraAdapter, TfLlamaModel, type LoraConfig } from '../../../policy/index.ts';
import type { Sample } from '../../../schemas/index.ts';
import { AdamW } from '../../../trainer/adamw.ts';
import { DISTRIBUTION_TOP_K, learnerStep } from '../../../trainer/learner-step.ts';
import { LoraTrainable } from '../../../trainer/trainable-policy.ts';
import { onEachBackend } from '../../support/on-each-backend.ts';
import { rlSample } from '../../support/rl-sample.ts';
import { syntheticConfig, syntheticSource } from '../../support/synthetic-llama.ts';

const config = syntheticConfig({ layers: 2 });
const prompt = [1, 7, 9, 11, 2];

const sample = (response: number[], over: Partial<Sample> = {}): Sample =>
  rlSample(prompt, response, -3, { exactLogprobs: true, teacherPromptTokens: null, ...over });

/** The model with a fresh adapter, the policy that trains it and an AdamW (lr 1e-2); `dispose` frees all three. */
async function loraRig(adapter: Partial<LoraConfig>, seed: number) {
  const model = await TfLlamaModel.load(config, syntheticSource(config));
  const lora = LoraAdapter.init(config, adapter, seed);
  const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
  const dispose = (): void => {
    opt.dispose();
    lora.dispose();
    model.dispose();
  };
  return { model, lora, policy: new LoraTrainable(model, lora), opt, dispose };
}

async function meanLogprob(model: TfLlamaModel, lora: LoraAdapter, s: Sample): Promise<number> {
  const lps = await model.tokenLogprobs(
    s.tokens,
    Array.from({ length: s.responseLength }, (_, i) => s.promptLength - 1 + i),
    lora,
  );
  return lps.reduce((a, b) => a + b, 0) / lps.length;
}

// On native TensorFlow the adapter's gradients come from the hand-written backward pass, on wasm from tf.grads.
onEachBackend(() => {
  test('LoRA steps make a rewarded reply likelier and a punished one less likely; only the adapter moves', async () => {
    const { model, lora, policy, opt, dispose } = await loraRig({ rank: 4, alpha: 8 }, 1);
    const good = sample([20, 21, 22], { reward: 1 });
    const bad = sample([30, 31, 32], { reward: -1 });
    const before = [await meanLogprob(model, lora, good), await meanLogprob(model, lora, bad)];
    const base = await model.tokenLogprobs(good.tokens, [4, 5, 6], null);
    for (let i = 0; i < 6; i++) {
      const m = await learnerStep(policy, opt, [{ sample: good }, { sample: bad }]);
      assert.equal(m.samples, 2);
      assert.equal(m.tokens, 6);
      assert.ok(m.kl > 0 && m.gradNorm > 0, JSON.stringify(m));
      assert.ok(m.lossAfter < m.loss, `step ${i}: ${m.lossAfter} < ${m.loss}`);
    }
    const after = [await meanLogprob(model, lora, good), await meanLogprob(model, lora, bad)];
    assert.ok(after[0] > before[0] + 0.1, `rewarded ${before[0]} → ${after[0]}`);
    assert.ok(after[1] < before[1] - 0.1, `punished ${before[1]} → ${after[1]}`);
    assert.deepEqual(await model.tokenLogprobs(good.tokens, [4, 5, 6], null), base, 'the frozen base is untouched');
    dispose();
  });

  test('a deferred teacher is scored with the current weights: the OPD advantage is exactly the hint’s effect', async () => {
    const { model, lora, policy, opt, dispose } = await loraRig({ rank: 2, alpha: 4 }, 2);
    const response = [40, 41];
    // A "hint" prompt that is the same as the rollout prompt: teacher − π_old = 0, so no gradient.
    // Made-up rollout log-probs (not exact): no mismatch correction weighs the advantage.
    const same = sample(response, { reward: 0, method: 'OPD', teacherPromptTokens: prompt, exactLogprobs: false });
    const m0 = await learnerStep(policy, opt, [{ sample: same }]);
    assert.ok(Math.abs(m0.loss) < 1e-6 && m0.gradNorm < 1e-6, JSON.stringify(m0));
    // A different prompt: a non-zero advantage, and the step follows it.
    const hinted = sample(response, { reward: 0, method: 'OPD', teacherPromptTokens: [1, 7, 9, 11, 13, 15, 2], exactLogprobs: false });
    const teacher = await model.tokenLogprobs([1, 7, 9, 11, 13, 15, 2, 40, 41], [6, 7], lora);
    const old = await model.tokenLogprobs([...prompt, 40, 41], [4, 5], lora);
    const m1 = await learnerStep(policy, opt, [{ sample: hinted }]);
    const expected = -((teacher[0] - old[0] + teacher[1] - old[1]) / 2);
    assert.ok(Math.abs(m1.loss - expected) < 1e-4, `loss ${m1.loss} = −mean(teacher − old) = ${expected}`);
    dispose();
  });

  test('opdAdvantage distribution: a deferred teacher’s top-k next-token distribution is matched by reverse KL at each position', async () => {
    const { policy, opt, dispose } = await loraRig({ rank: 2, alpha: 4 }, 3);
    const response = [40, 41, 42];
    const distribution = { opdAdvantage: 'distribution' as const, measureAfter: true };
    // The hint changes nothing: teacher and student distributions agree, so the KL and its gradient are 0.
    // Made-up rollout log-probs (not exact): no mismatch correction weighs the advantage.
    const same = sample(response, { reward: 0, method: 'OPD', teacherPromptTokens: prompt, exactLogprobs: false });
    const m0 = await learnerStep(policy, opt, [{ sample: same }], distribution);
    assert.ok(Math.abs(m0.loss) < 1e-5 && m0.gradNorm < 1e-5, JSON.stringify(m0));
    // A real hint: the loss is the reverse KL over the teacher's top 32 ids and a tail bin, by hand.
    const hintPrompt = [1, 7, 9, 11, 13, 15, 2];
    const hinted = sample(response, { reward: 0, method: 'OPD', teacherPromptTokens: hintPrompt });
    const dist = (ids: number[], from: number): number[][] => {
      const [l] = policy.logits([{ ids, positions: response.map((_, i) => from + i) }]);
      const rows = l.arraySync();
      l.dispose();
      return rows.map((r) => {
        const m = Math.max(...r);
        const z = Math.log(r.reduce((a, x) => a + Math.exp(x - m), 0)) + m;
        return r.map((x) => x - z);
      });
    };
    const student = dist([...prompt, 40, 41], prompt.length - 1);
    const teacher = dist([...hintPrompt, 40, 41], hintPrompt.length - 1);
    let expected = 0;
    for (let t = 0; t < response.length; t++) {
      const top = teacher[t]
        .map((lp, id) => ({ lp, id }))
        .sort((a, b) => b.lp - a.lp)
        .slice(0, DISTRIBUTION_TOP_K);
      const inTop = new Set(top.map((e) => e.id));
      let kl = top.reduce((a, e) => a + Math.exp(student[t][e.id]) * (student[t][e.id] - e.lp), 0);
      const sTail = student[t].reduce((a, lp, id) => a + (inTop.has(id) ? 0 : Math.exp(lp)), 0);
      const tTail = 1 - top.reduce((a, e) => a + Math.exp(e.lp), 0);
      kl += sTail * (Math.log(sTail) - Math.log(tTail));
      expected += kl / response.length;
    }
    assert.ok(expected > 1e-3, `the hint moves the distribution (${expected})`);
    const m1 = await learnerStep(policy, opt, [{ sample: hinted }], distribution);
    assert.ok(Math.abs(m1.loss - expected) < 1e-4, `loss ${m1.loss} = reverse KL by hand ${expected}`);
    assert.ok(m1.lossAfter < m1.loss, `the step moves the student toward the teacher: ${m1.lossAfter} < ${m1.loss}`);
    // Under the raw term the same sample is scored on its sampled tokens only: another loss.
    const raw = await learnerStep(policy, opt, [{ sample: hinted }]);
    assert.ok(Math.abs(raw.loss - m1.lossAfter) > 1e-4, `raw ${raw.loss} differs from the distribution term ${m1.lossAfter}`);
    dispose();
  });

  test('the KL guard halves a step that moves the policy too far, and undoes it when halving is not enough', async () => {
    const { model, policy, dispose } = await loraRig({ rank: 4, alpha: 8 }, 3);
    const s = sample([43, 44, 45], { reward: 1 });
    const free = await learnerStep(policy, new AdamW({ lr: 0.02, weightDecay: 0 }), [{ sample: s }]);
    assert.ok(free.kl > 1e-3, `an unguarded large step moves far: ${free.kl}`);
    const lora2 = LoraAdapter.init(config, { rank: 4, alpha: 8 }, 3);
    const policy2 = new LoraTrainable(model, lora2);
    const before = await meanLogprob(model, lora2, s);
    const guarded = await learnerStep(policy2, new AdamW({ lr: 0.02, weightDecay: 0 }), [{ sample: s }], { maxKl: free.kl / 100 });
    assert.equal(guarded.halvings, 2);
    assert.match(guarded.rejected ?? '', /update undone/);
    assert.equal(guarded.kl, 0);
    assert.equal(await meanLogprob(model, lora2, s), before, 'the undone step leaves the adapter as it was');
    const lora3 = LoraAdapter.init(config, { rank: 4, alpha: 8 }, 3);
    const halved = await learnerStep(new LoraTrainable(model, lora3), new AdamW({ lr: 0.02, weightDecay: 0 }), [{ sample: s }], {
      maxKl: free.kl / 2,
    });
    assert.ok(halved.halvings >= 1 && halved.rejected === null && halved.kl <= free.kl / 2, JSON.stringify(halved));
    for (const l of [lora2, lora3]) l.dispose();
    dispose();
  });

  test('engine/trainer mismatch: truncated importance weights on exact samples only, and the drift they are reported with', async () => {
    const { model, lora, policy, dispose } = await loraRig({ rank: 2, alpha: 4 }, 4);
    const response = [46, 47, 48];
    const own = await model.tokenLogprobs([...prompt, ...response], [4, 5, 6], lora);
    // The rollout log-probs are the trainer's own minus 2 nats: the ratio is e² > 2, capped at 2.
    const exact = sample(response, { reward: 1, rolloutLogprobs: own.map((x) => x - 2) });
    const tempered = sample(response, { reward: 1, rolloutLogprobs: own.map((x) => x - 2), exactLogprobs: false });
    const m = await learnerStep(policy, new AdamW({ lr: 1e-3 }), [{ sample: exact }, { sample: tempered }], {
      mismatchTis: true,
      measureAfter: false,
    });
    assert.ok(Math.abs(m.logprobDrift - 2) < 1e-4, `drift over the exact sample only: ${m.logprobDrift}`);
    // k3 of KL(π_rollout ‖ π_old) with r = log π_old − log π_rollout = 2 on every token: e² − 1 − 2.
    assert.ok(Math.abs(m.mismatchKl - (Math.exp(2) - 3)) < 1e-3, `k3 ${m.mismatchKl}`);
    assert.equal(m.tisMean, 2);
    assert.equal(m.tisTruncated, 1);
    // Loss: −mean over samples of (A · weight): exact sample A = 1·2, tempered A = 1.
    assert.ok(Math.abs(m.loss - -(2 + 1) / 2) < 1e-4, `loss ${m.loss}`);
    // Below the cap the weight is the ratio itself; tisCap 0 turns the correction off (the drift is still reported).
    const now = await model.tokenLogprobs([...prompt, ...response], [4, 5, 6], lora);
    const near = sample(response, { reward: 1, rolloutLogprobs: now.map((x) => x - 0.5) });
    const under = await learnerStep(policy, new AdamW({ lr: 0 }), [{ sample: near }], { measureAfter: false });
    assert.ok(Math.abs(under.tisMean - Math.exp(0.5)) < 1e-4 && under.tisTruncated === 0, JSON.stringify(under));
    assert.ok(Math.abs(under.loss - -Math.exp(0.5)) < 1e-4, `loss ${under.loss} = −e^0.5 (a mismatch of 0.5 nats weighs A by e^0.5)`);
    const off = await learnerStep(policy, new AdamW({ lr: 0 }), [{ sample: near }], { measureAfter: false, tisCap: 0 });
    assert.ok(off.tisMean === 1 && Math.abs(off.loss - -1) < 1e-4 && Math.abs(off.logprobDrift - 0.5) < 1e-4, JSON.stringify(off));
    dispose();
  });

  test('every log-prob is taken under the distribution the sample was drawn from: logits ÷ temperature, renormalised over the top-p nucleus', async () => {
    const { model, lora, policy, dispose } = await loraRig({ rank: 2, alpha: 4 }, 5);
    const response = [46, 47, 48];
    const positions = [4, 5, 6];
    const logits = model.logitsAt([...prompt, ...response], positions, lora);
    const rows = (await logits.array()) as number[][];
    logits.dispose();
    const logSoftmax = (v: number[]): number[] => {
      const m = Math.max(...v);
      const z = Math.log(v.reduce((a, x) => a + Math.exp(x - m), 0)) + m;
      return v.map((x) => x - z);
    };
    // At temperature 0.5 over the whole vocabulary.
    const atT = rows.map((r, i) => logSoftmax(r.map((x) => x / 0.5))[response[i]]);
    const cold = sample(response, { reward: 1, rolloutLogprobs: atT, samplingTemperature: 0.5 });
    const m1 = await learnerStep(policy, new AdamW({ lr: 0 }), [{ sample: cold }], { measureAfter: false });
    assert.ok(m1.logprobDrift < 1e-4, `scored at T = 0.5, the engine's log-probs match: drift ${m1.logprobDrift}`);
    // The same at temperature 1 would be scored against the wrong distribution.
    const asIfT1 = await learnerStep(policy, new AdamW({ lr: 0 }), [{ sample: { ...cold, samplingTemperature: 1 } }], {
      measureAfter: false,
    });
    assert.ok(asIfT1.logprobDrift > 0.01, `drift ${asIfT1.logprobDrift}`);
    // Top-p 0.5, then T 0.5: the nucleus of the model's own distribution (the sampled token kept), renormalised.
    const nucleus = rows.map((r, i) => {
      const p = logSoftmax(r).map(Math.exp);
      const order = p.map((_, k) => k).sort((a, b) => p[b] - p[a]);
      const keep = new Set<number>();
      let cum = 0;
      for (const k of order) {
        keep.add(k);
        cum += p[k];
        if (cum >= 0.5) break;
      }
      keep.add(response[i]);
      const ids = [...keep];
      const lp = logSoftmax(ids.map((k) => r[k] / 0.5));
      return lp[ids.indexOf(response[i])];
    });
    const nucleusSample = sample(response, { reward: 1, rolloutLogprobs: nucleus, samplingTemperature: 0.5, samplingTopP: 0.5 });
    const m2 = await learnerStep(policy, new AdamW({ lr: 0 }), [{ sample: nucleusSample }], { measureAfter: false });
    assert.ok(m2.logprobDrift < 1e-4, `top-p 0.5 at T 0.5: drift ${m2.logprobDrift}`);
    dispose();
  });
});
