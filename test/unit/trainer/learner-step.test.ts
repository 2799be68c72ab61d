import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../../../trainer/adamw.ts';
import { byContent, learnerStep, packBatch } from '../../../trainer/learner-step.ts';
import { RewardBaseline } from '../../../trainer/reward-baseline.ts';
import { BuiltinTrainable } from '../../../trainer/trainable-policy.ts';
import { TransformerModel } from '../../../policy/builtin/model.ts';
import { ByteTokenizer } from '../../../policy/builtin/tokenizer.ts';
import type { Sample } from '../../../schemas/index.ts';
import { rlSample } from '../../support/rl-sample.ts';
import { close, TINY } from '../../support/tfjs-helpers.ts';

const tok = new ByteTokenizer();
const model = (seed = 1) => TransformerModel.init({ ...TINY, vocabSize: tok.vocabSize }, seed);

function sample(text: string, over: Partial<Sample> = {}): Sample {
  const prompt = [tok.bos, tok.user, ...tok.encode('hi'), tok.end, tok.assistant];
  return rlSample(prompt, [...tok.encode(text), tok.end], -5, over);
}

async function meanLogprob(m: TransformerModel, s: Sample): Promise<number> {
  const p = packBatch([{ sample: s }], m.config.contextLength);
  const lp = tf.tidy(() =>
    m.tokenLogprobs(tf.tensor2d(p.x, undefined, 'int32'), tf.tensor2d(p.y, undefined, 'int32'), tf.tensor2d(p.mask)),
  );
  const v = Array.from(await lp.data());
  lp.dispose();
  return v.reduce((a, b) => a + b, 0) / s.responseLength;
}

test('repeated steps on a fixed batch lower the loss: rewarded replies become likelier, punished ones less likely', async () => {
  const m = model();
  const opt = new AdamW({ lr: 3e-3, weightDecay: 0 });
  const good = sample('yes', { reward: 1, userId: 'a' });
  const bad = sample('no!', { reward: -1, userId: 'b' });
  const before = [await meanLogprob(m, good), await meanLogprob(m, bad)];
  let first = 0;
  for (let i = 0; i < 8; i++) {
    const r = await learnerStep(m, opt, [{ sample: good }, { sample: bad }]);
    if (i === 0) first = r.loss;
    assert.ok(r.lossAfter < r.loss, `step ${i}: surrogate after the update (${r.lossAfter}) is below before (${r.loss})`);
    assert.equal(r.samples, 2);
    assert.equal(r.tokens, 8);
  }
  const after = [await meanLogprob(m, good), await meanLogprob(m, bad)];
  assert.ok(after[0] > before[0] + 0.05, `rewarded log-prob ${before[0]} → ${after[0]}`);
  assert.ok(after[1] < before[1] - 0.05, `punished log-prob ${before[1]} → ${after[1]}`);
  close(first, 0, 1e-5, 'at ratio 1 the surrogate is −mean(A) = −(1 − 1)/2');
  m.dispose();
  opt.dispose();
});

test('RL-only samples: the teacher term is exactly 0 (reward 0 and no teacher → no gradient at all)', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
  const w0 = Array.from(await m.weights.get('wte')!.data());
  const r = await learnerStep(m, opt, [{ sample: sample('abc', { reward: 0, teacherLogprobs: null }) }]);
  assert.equal(r.loss, 0);
  assert.equal(r.gradNorm, 0);
  assert.deepEqual(Array.from(await m.weights.get('wte')!.data()), w0, 'weights unchanged');
  // With a reward, an RL-only sample's loss is exactly −r (no teacher contribution).
  const r2 = await learnerStep(m, opt, [{ sample: sample('abc', { reward: -1, teacherLogprobs: null }) }]);
  close(r2.loss, 1, 1e-6);
  m.dispose();
  opt.dispose();
});

test('OPD: the advantage is teacher − π_old, and π_old is recomputed (drift against the rollout is reported)', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1e-3, weightDecay: 0 });
  const base = sample('ok');
  const p = packBatch([{ sample: base }], m.config.contextLength);
  const lp = tf.tidy(() =>
    m.tokenLogprobs(tf.tensor2d(p.x, undefined, 'int32'), tf.tensor2d(p.y, undefined, 'int32'), tf.tensor2d(p.mask)),
  );
  const all = Array.from(await lp.data());
  lp.dispose();
  const old = all.slice(base.promptLength - 1, base.promptLength - 1 + base.responseLength);
  const s = sample('ok', {
    method: 'OPD',
    reward: 0,
    exactLogprobs: true,
    rolloutLogprobs: old.map((x) => x - 0.5),
    teacherLogprobs: old.map((x) => x + 1),
  });
  // The formula alone: the mismatch correction (which would weigh A by e^0.5) is off; lora-step.test.ts tests it.
  const r = await learnerStep(m, opt, [{ sample: s }], { tisCap: 0 });
  close(r.loss, -1, 1e-4, 'A = teacher − old = +1 on every token');
  close(r.logprobDrift, 0.5, 1e-4, 'rollout was 0.5 below the recomputed π_old');
  m.dispose();
  opt.dispose();
});

test('top-k teacher samples use the reverse KL and a masked sample contributes nothing', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1e-3 });
  const s = sample('ok', {
    method: 'OPD',
    reward: 0,
    teacherLogprobs: [-1, -1, -1],
    teacherTopK: [0, 1, 2].map(() => ({ ids: [111, 107], logprobs: [-0.2, -2] })),
  });
  const masked = sample('zz', { reward: 1, lossMask: [0, 0, 0] });
  const r = await learnerStep(m, opt, [{ sample: s }, { sample: masked }]);
  assert.ok(Number.isFinite(r.loss) && r.loss > 0, `reverse KL is positive, got ${r.loss}`);
  assert.equal(r.samples, 1, 'the masked sample has no trained tokens');
  assert.equal(r.meanReward, 0);
  m.dispose();
  opt.dispose();
});

test('samples longer than the context are skipped and counted', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1e-3 });
  const r = await learnerStep(m, opt, [{ sample: sample('x'.repeat(60), { reward: 1 }) }]);
  assert.equal(r.skipped, 1);
  assert.equal(r.samples, 0);
  m.dispose();
  opt.dispose();
});

test('reward baseline: each user’s rewards are measured against their running mean, fed only by applied steps', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
  const baseline = new RewardBaseline({ decay: 0.5 });
  const never = (text: string) => sample(text, { reward: -1, userId: 'never-satisfied' });
  // First step: no history, the full −1 (loss −A = 1 at ratio 1).
  const r1 = await learnerStep(m, opt, [{ sample: never('abc') }], { rewardBaseline: baseline });
  close(r1.loss, 1, 1e-6);
  assert.equal(r1.meanReward, -1, 'the reported reward is the reward itself');
  close(baseline.of(never('x')), -0.5, 1e-9);
  // Second: −1 against a mean of −0.5 → A = −0.5.
  const r2 = await learnerStep(m, opt, [{ sample: never('abd') }], { rewardBaseline: baseline });
  close(r2.loss, 0.5, 1e-6);
  // Another user, and another model, start from 0; a reward of 0 is never shifted.
  assert.equal(baseline.of(sample('x', { reward: -1, userId: 'someone-else' })), 0);
  assert.equal(baseline.of(sample('x', { reward: -1, userId: 'never-satisfied', policyModelId: 'other' })), 0);
  assert.equal(baseline.of(sample('x', { reward: 0, userId: 'never-satisfied' })), 0);
  // Once the mean is −1 a further −1 moves nothing at all.
  const settled = new RewardBaseline({ decay: 1 });
  settled.observe([never('x')]);
  const w0 = Array.from(await m.weights.get('wte')!.data());
  const fresh = new AdamW({ lr: 1e-2, weightDecay: 0 }); // no momentum left from the steps above
  const r3 = await learnerStep(m, fresh, [{ sample: never('abe') }], { rewardBaseline: settled });
  assert.equal(r3.loss, 0);
  assert.equal(r3.gradNorm, 0);
  assert.deepEqual(Array.from(await m.weights.get('wte')!.data()), w0, 'weights unchanged');
  // …while a +1 after the run of −1 counts double.
  const r4 = await learnerStep(m, opt, [{ sample: sample('abf', { reward: 1, userId: 'never-satisfied' }) }], { rewardBaseline: settled });
  close(r4.loss, -2, 1e-6);
  m.dispose();
  opt.dispose();
  fresh.dispose();
});

test('reward baseline: a rejected step does not feed the mean; the decay is checked; memory is bounded', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1, weightDecay: 0 });
  const baseline = new RewardBaseline({ decay: 0.5 });
  // A huge learning rate with a tiny KL bound: the step is undone, and the mean stays at 0.
  const r = await learnerStep(m, opt, [{ sample: sample('abc', { reward: -1, userId: 'u' }) }], { rewardBaseline: baseline, maxKl: 1e-9 });
  assert.ok(r.rejected, 'the step was undone');
  assert.equal(baseline.of(sample('x', { reward: -1, userId: 'u' })), 0);
  assert.throws(() => new RewardBaseline({ decay: 0 }), /decay must be in \(0, 1\]/);
  assert.throws(() => new RewardBaseline({ decay: 1.5 }), /decay must be in \(0, 1\]/);
  const small = new RewardBaseline({ decay: 1, maxUsers: 2 });
  for (const u of ['a', 'b', 'c']) small.observe([sample('x', { reward: 1, userId: u })]);
  assert.equal(small.of(sample('x', { reward: -1, userId: 'a' })), 0, 'the least recently seen user is forgotten');
  assert.equal(small.of(sample('x', { reward: -1, userId: 'c' })), 0, 'a mean above 0 is not subtracted');
  small.observe([sample('x', { reward: -1, userId: 'c' })]);
  assert.equal(small.of(sample('x', { reward: 1, userId: 'c' })), -1);
  m.dispose();
  opt.dispose();
});

test('reward baseline prior −1: a new user’s −1 pushes nothing until a reply pleased them; their first +1 counts double', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
  const baseline = new RewardBaseline({ decay: 0.5, prior: -1 });
  const w0 = Array.from(await m.weights.get('wte')!.data());
  const r1 = await learnerStep(m, opt, [{ sample: sample('abc', { reward: -1, userId: 'new' }) }], { rewardBaseline: baseline });
  assert.equal(r1.loss, 0);
  assert.equal(r1.gradNorm, 0);
  assert.deepEqual(Array.from(await m.weights.get('wte')!.data()), w0, 'weights unchanged');
  assert.equal(baseline.of(sample('x', { reward: -1, userId: 'new' })), -1, 'a steady −1 keeps the mean at −1');
  const r2 = await learnerStep(m, opt, [{ sample: sample('abd', { reward: 1, userId: 'new' }) }], { rewardBaseline: baseline });
  close(r2.loss, -2, 1e-6);
  // The +1 moved the mean to 0: from now on a −1 pushes at full strength.
  assert.equal(baseline.of(sample('x', { reward: -1, userId: 'new' })), 0);
  assert.throws(() => new RewardBaseline({ prior: 0.5 }), /prior must be in \[-1, 0\]/);
  assert.throws(() => new RewardBaseline({ prior: -1.5 }), /prior must be in \[-1, 0\]/);
  m.dispose();
  opt.dispose();
});

test('pleased damping: a step for a pleased user moves the weights by 1 − damping × their mean; a new user’s at full rate', async () => {
  const wte = async (m: TransformerModel) => Array.from(await m.weights.get('wte')!.data());
  const moved = async (damping: number, means: RewardBaseline) => {
    const m = model();
    const opt = new AdamW({ lr: 1e-2, weightDecay: 0 });
    const w0 = await wte(m);
    const r = await learnerStep(m, opt, [{ sample: sample('abc', { reward: 1, userId: 'u' }) }], {
      rewardBaseline: means,
      pleasedDamping: damping,
    });
    const w1 = await wte(m);
    m.dispose();
    opt.dispose();
    return { r, delta: Math.sqrt(w1.reduce((a, v, i) => a + (v - w0[i]) ** 2, 0)) };
  };
  const pleasedUser = () => {
    const b = new RewardBaseline({ decay: 1, subtract: false });
    b.observe([sample('x', { reward: 1, userId: 'u' })]);
    return b;
  };
  const full = await moved(0, pleasedUser());
  assert.equal(full.r.lrScale, 1);
  assert.ok(full.delta > 0);
  const half = await moved(0.5, pleasedUser());
  close(half.r.lrScale, 0.5, 1e-12);
  // Adam's first step moves each weight by lr × sign(g): the same gradient at half the rate moves half as far.
  close(half.delta / full.delta, 0.5, 1e-3);
  const frozen = await moved(1, pleasedUser());
  assert.equal(frozen.r.lrScale, 0);
  assert.equal(frozen.delta, 0, 'a user whose every reply pleased does not move the model');
  // A user not seen yet (prior 0) or one with a mean below 0 is trained at the full rate.
  const fresh = await moved(1, new RewardBaseline({ decay: 1, subtract: false }));
  assert.equal(fresh.r.lrScale, 1);
  const unhappy = new RewardBaseline({ decay: 1, subtract: false });
  unhappy.observe([sample('x', { reward: -1, userId: 'u' })]);
  assert.equal((await moved(1, unhappy)).r.lrScale, 1);
  const m = model();
  const opt = new AdamW({ lr: 1e-2 });
  await assert.rejects(learnerStep(m, opt, [{ sample: sample('abc') }], { pleasedDamping: 0.5 }), /needs a rewardBaseline/);
  await assert.rejects(learnerStep(m, opt, [{ sample: sample('abc') }], { pleasedDamping: 2, rewardBaseline: unhappy }), /in \[0, 1\]/);
  m.dispose();
  opt.dispose();
});

test('a reward baseline with subtract: false keeps the means and shifts no reward', () => {
  const b = new RewardBaseline({ decay: 0.5, prior: -1, subtract: false });
  assert.equal(b.meanOf(sample('x', { userId: 'u' })), -1, 'a new user starts at the prior');
  assert.equal(b.of(sample('x', { reward: -1, userId: 'u' })), 0);
  b.observe([sample('x', { reward: 1, userId: 'u' })]);
  assert.equal(b.meanOf(sample('x', { userId: 'u' })), 0);
  assert.equal(b.of(sample('x', { reward: -1, userId: 'u' })), 0);
});

test('opdOnReference: a deferred teacher’s hint is measured on the frozen base, whatever the trained weights are', async () => {
  const ref = model(3);
  const hinted = [tok.bos, tok.user, ...tok.encode('hi, be brief'), tok.end, tok.assistant];
  const s = sample('ok.', { reward: 0, method: 'OPD', teacherPromptTokens: hinted });
  const resp = s.tokens.slice(s.promptLength);
  const onHint = sample('ok.', { tokens: [...hinted, ...resp], promptLength: hinted.length });
  // At ratio 1 the surrogate is −mean_t(A_t): the hint's effect on the response's log-probs.
  const effect = async (m: TransformerModel) => (await meanLogprob(m, onHint)) - (await meanLogprob(m, s));
  const lossOf = async (m: TransformerModel, opdOnReference: boolean) => {
    const opt = new AdamW({ lr: 1e-3, weightDecay: 0 });
    const r = await learnerStep(m, opt, [{ sample: s }], { reference: ref, opdOnReference });
    opt.dispose();
    return r.loss;
  };
  const [a, b] = [model(1), model(2)];
  const expectedBase = -(await effect(ref));
  close(await lossOf(a, true), expectedBase, 1e-4, 'the base’s hint effect');
  close(await lossOf(b, true), expectedBase, 1e-4, 'the same for other trained weights');
  const [c, d] = [model(1), model(2)];
  const onC = -(await effect(c));
  close(await lossOf(c, false), onC, 1e-4, 'by default the trained weights’ own hint effect');
  assert.ok(Math.abs(onC - expectedBase) > 1e-3, 'the two measures differ here');
  await assert.rejects(learnerStep(d, new AdamW({ lr: 1e-3 }), [{ sample: s }], { opdOnReference: true }), /needs a reference/);
  for (const m of [ref, a, b, c, d]) m.dispose();
});

test('a batch makes the same update in whatever order its samples arrive (weights and reward baseline, to the bit)', async () => {
  const batch = [
    sample('yes', { reward: 1, userId: 'u', teacherLogprobs: [-1, -2, -3, -4] }),
    sample('no!', { reward: -1, userId: 'u' }),
    sample('hmm', { reward: 1, userId: 'v' }),
  ];
  const run = async (order: number[]) => {
    const m = model(3);
    const opt = new AdamW({ lr: 1e-2 });
    const baseline = new RewardBaseline({ decay: 0.5, prior: -1 });
    for (let step = 0; step < 2; step++)
      await learnerStep(
        m,
        opt,
        order.map((i) => ({ sample: batch[i] })),
        { rewardBaseline: baseline, maxKl: 10 },
      );
    const weights = await Promise.all([...m.weights.values()].map(async (w) => Array.from(await w.data())));
    const means = ['u', 'v'].map((userId) => baseline.of(sample('x', { reward: -1, userId })));
    m.dispose();
    opt.dispose();
    return { weights, means };
  };
  const a = await run([0, 1, 2]);
  const b = await run([2, 1, 0]);
  assert.notEqual(a.means[0], -1, 'the baseline moved');
  assert.deepEqual(b.means, a.means);
  assert.deepEqual(b.weights, a.weights);
});

test('byContent: tokens first, then reward and user; a total order on distinct samples', () => {
  const s = (text: string, over: Partial<Sample> = {}) => ({ sample: sample(text, over) });
  assert.ok(byContent(s('ab'), s('ac')) < 0);
  assert.ok(byContent(s('ab', { reward: -1 }), s('ab', { reward: 1 })) < 0);
  assert.ok(byContent(s('ab', { userId: 'a' }), s('ab', { userId: 'b' })) < 0);
  assert.equal(byContent(s('ab'), s('ab')), 0);
});

test('tokenMean batch (GRPO, DAPO-style): the loss is the mean over every trained token, not over samples', async () => {
  const m = model();
  const short = sample('a', { reward: 1 }); // 2 response tokens (with <|end|>)
  const long = sample('bbbbb', { reward: -1 }); // 6
  const bySample = await learnerStep(m, new AdamW({ lr: 0 }), [{ sample: short }, { sample: long }], { measureAfter: false });
  const byToken = await learnerStep(m, new AdamW({ lr: 0 }), [{ sample: short }, { sample: long }], {
    measureAfter: false,
    tokenMean: 'batch',
  });
  // At ratio 1 every token's loss is −A.
  close(bySample.loss, 0, 1e-5, 'per sample: −(1 + (−1))/2');
  close(byToken.loss, (-1 * 2 + 1 * 6) / 8, 1e-5, 'per token: (−1·2 + 1·6)/8');
  m.dispose();
});

test('the event loop gets a turn between micro-batches: the services sharing the process are not starved for a step', async () => {
  const m = model();
  const opt = new AdamW({ lr: 1e-3, weightDecay: 0 });
  // Passes of at most 30 tokens: each sample (27 tokens) is a micro-batch of its own.
  const policy = new (class extends BuiltinTrainable {
    override readonly microBatchTokens = 30;
  })(m);
  const items = ['a long reply of words', 'another long reply here', 'and a third long one'].map((t) => ({ sample: sample(t) }));
  // One tick per turn of the event loop (a heartbeat's timer and a socket's reads get theirs in the same turns).
  let turns = 0;
  let next: NodeJS.Immediate | undefined;
  const tick = () => {
    turns++;
    next = setImmediate(tick);
  };
  next = setImmediate(tick);
  try {
    const r = await learnerStep(policy, opt, items);
    assert.equal(r.samples, 3);
  } finally {
    clearImmediate(next);
  }
  // Three micro-batches, then three passes measuring the update: a turn after each.
  assert.ok(turns >= 6, `the loop turned ${turns} times during the step`);
  m.dispose();
  opt.dispose();
});
