import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdamW } from '../../../trainer/adamw.ts';
import { lastUserMessage, ratedTurnOf, weighByConsensus } from '../../../trainer/consensus-weighting.ts';
import { learnerStep, packBatch, type StepSample } from '../../../trainer/learner-step.ts';
import { TransformerModel } from '../../../policy/builtin/model.ts';
import { renderPrompt } from '../../../policy/builtin/chat-template.ts';
import { ByteTokenizer } from '../../../policy/builtin/tokenizer.ts';
import { UserConsensus } from '../../../trainer/user-consensus.ts';
import type { Sample } from '../../../schemas/index.ts';
import { rlSample } from '../../support/rl-sample.ts';
import { TINY } from '../../support/tfjs-helpers.ts';

const tok = new ByteTokenizer();

function sample(userId: string, ask: string, reply: string, reward: number): Sample {
  const prompt = [tok.bos, tok.user, ...tok.encode(ask), tok.end, tok.assistant];
  return rlSample(prompt, [...tok.encode(reply), tok.end], -5, { userId, reward, weight: 1 });
}

test('lastUserMessage: the last user segment of a rendered multi-turn prompt', () => {
  const { ids } = renderPrompt(
    tok,
    [
      { role: 'system', content: 'be nice' },
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'an answer' },
      { role: 'user', content: 'What is a prime?' },
    ],
    { maxPromptTokens: 200 },
  );
  assert.equal(lastUserMessage(ids), 'What is a prime?');
  const t = ratedTurnOf(sample('u', 'hello there', 'Hi! How are you?', 0.7));
  assert.deepEqual(t, { userId: 'u', prompt: 'hello there', response: 'Hi! How are you?', reward: 1 });
});

test('an adversary contradicting three agreeing users gets a lower effective weight in the step', async () => {
  const asks = ['what is a prime', 'why is the sky blue', 'how do magnets work'];
  const items: StepSample[] = [];
  for (const [j, ask] of asks.entries()) {
    const reply = `Here is the answer number ${j}. Does that help?`;
    for (const u of ['ann', 'bob', 'cat']) items.push({ sample: sample(u, ask, reply, 1) });
    items.push({ sample: sample('eve', ask, reply, -1) });
  }
  const consensus = new UserConsensus();
  const { items: weighed, factors } = weighByConsensus(consensus, items);
  // The weights the step packs (and multiplies its advantages by).
  const used = packBatch(weighed, 1000).weight;
  const by = (u: string) => used.filter((_, i) => weighed[i].sample.userId === u);
  const eve = by('eve');
  assert.equal(eve.length, 3);
  for (const u of ['ann', 'bob', 'cat']) for (const w of by(u)) for (const e of eve) assert.ok(e < w, `eve ${e} < ${u} ${w}`);
  // 3 exact disagreements on a 4:1 prior (4/8), plus an exactly opposed preference (f = 0) on
  // 0.5 × 3 turns of evidence: 4 / 9.5 ≈ 0.42, against a stranger's 0.8: ≈ 0.53.
  assert.ok(Math.max(...eve) < 0.55, `eve's weight ${eve[0]}`);
  for (const u of ['ann', 'bob', 'cat']) assert.deepEqual(by(u), [1, 1, 1], `${u} agrees: full weight, never more`);
  assert.deepEqual(factors, used);
  const stats = Object.fromEntries(consensus.stats().map((s) => [s.userId, s]));
  assert.equal(stats.eve.disagreements, 3);
  assert.ok(consensus.conflicts().some((c) => c.users.includes('eve')));
  // The step runs on the weighted batch.
  const model = TransformerModel.init({ ...TINY, contextLength: 96, vocabSize: tok.vocabSize }, 3);
  const opt = new AdamW({ lr: 1e-3 });
  const m = await learnerStep(model, opt, weighed);
  assert.equal(m.samples, items.length);
  model.dispose();
  opt.dispose();
});

test('private chats (no two turns alike): a contrarian user still gets a lower weight than three who agree', () => {
  const topics = ['primes', 'the sky', 'magnets', 'rivers', 'kafka', 'bread', 'chess', 'volcanoes'];
  const items: StepSample[] = [];
  let k = 0;
  for (let r = 0; r < 5; r++) {
    for (const u of ['ann', 'bob', 'cat', 'eve']) {
      const t = topics[k++ % topics.length];
      const sign = u === 'eve' ? -1 : 1;
      // Everyone is asked something different; they all see replies of both kinds.
      items.push({ sample: sample(u, `${u} asks about ${t}`, `Here is something about ${t}. Want to know more?`, sign) });
      items.push({
        sample: sample(u, `${u} wonders about ${t}`, `${t} is a long story with many parts, told in full here without a question.`, -sign),
      });
    }
  }
  const consensus = new UserConsensus();
  const { factors } = weighByConsensus(consensus, items);
  const f = (u: string) => factors.filter((_, i) => items[i].sample.userId === u);
  for (const u of ['ann', 'bob', 'cat'])
    for (const w of f(u)) assert.ok(w > 0.8 && w > f('eve')[0] + 0.3, `${u} ${w} vs eve ${f('eve')[0]}`);
  // 10 rated turns each (≥ minConflictEvidence 8): eve is reported against each of the others.
  assert.deepEqual(
    consensus
      .conflicts()
      .map((c) => c.users.join('/'))
      .sort(),
    ['ann/eve', 'bob/eve', 'cat/eve'],
  );
});

test('a lone user, with nobody to agree or disagree with, trains at full weight', () => {
  const items: StepSample[] = ['what is a prime', 'why is the sky blue', 'how do magnets work'].map((ask, j) => ({
    sample: sample('solo', ask, `Answer ${j}, told at length.`, j === 1 ? 1 : -1),
  }));
  const consensus = new UserConsensus();
  const { items: weighed, factors } = weighByConsensus(consensus, items);
  assert.equal(consensus.weight('solo'), 0.8, 'the consensus still knows nothing about them');
  assert.deepEqual(factors, [1, 1, 1]);
  assert.deepEqual(
    weighed.map((it) => it.sample.weight),
    items.map((it) => it.sample.weight),
  );
});
