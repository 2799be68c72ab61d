import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizePrompt, UserConsensus } from '../../../trainer/user-consensus.ts';

describe('UserConsensus', () => {
  it('a new user starts at the prior (4/5 = 0.8) and anonymous users are one user', () => {
    const c = new UserConsensus();
    assert.equal(c.weight('nobody'), 0.8);
    c.observe({ userId: null, prompt: 'hi', response: 'Hello!', reward: 1 });
    assert.equal(c.stats()[0].userId, '(anonymous)');
  });

  it('users who agree keep high weights; one who contradicts the consensus sinks', () => {
    const c = new UserConsensus();
    const prompts = ['What is Kafka?', 'How do I sort a list?', 'Tell me a joke', 'Explain RL', 'Name a colour'];
    for (const [i, p] of prompts.entries()) {
      const good = `Here is an answer number ${i}. Does that help?`;
      // Three users like the reply; the adversary dislikes the very same reply.
      for (const u of ['ann', 'bob', 'cid']) c.observe({ userId: u, prompt: p, response: good, reward: 1 });
      c.observe({ userId: 'eve', prompt: p, response: good, reward: -1 });
    }
    const s = Object.fromEntries(c.stats().map((x) => [x.userId, x]));
    assert.equal(s.eve.disagreements, 5);
    assert.equal(s.eve.agreements, 0);
    assert.equal(s.eve.weight, 4 / 10, 'Beta(4+0, 1+5) mean');
    assert.equal(s.cid.agreements, 5);
    assert.equal(s.cid.weight, 9 / 10);
    // bob agreed with ann each time (1 comparison each), ann had nobody before her.
    assert.equal(s.ann.agreements, 0);
    assert.ok(s.bob.weight > s.eve.weight);
  });

  it('near-identical responses to the same prompt are comparable, different ones are not', () => {
    const c = new UserConsensus();
    c.observe({ userId: 'ann', prompt: 'Hi there!', response: 'Hello Sam, how are you today?', reward: 1 });
    c.observe({ userId: 'eve', prompt: 'hi there', response: 'Hello Sam, how are you today', reward: -1 });
    c.observe({ userId: 'eve', prompt: 'hi there', response: 'Completely different words entirely.', reward: -1 });
    const eve = c.stats().find((s) => s.userId === 'eve')!;
    assert.equal(eve.disagreements, 1, 'only the near-identical response was compared');
    assert.equal(normalizePrompt('  Hi,   THERE! '), 'hi there');
  });

  it('zero rewards carry no opinion', () => {
    const c = new UserConsensus();
    c.observe({ userId: 'ann', prompt: 'p', response: 'r r r', reward: 0 });
    c.observe({ userId: 'bob', prompt: 'p', response: 'r r r', reward: 1 });
    assert.deepEqual(
      c.stats().map((s) => s.agreements + s.disagreements),
      [0, 0],
    );
  });

  it('reports users who push the model in opposite directions, with the rate', () => {
    const c = new UserConsensus({ minConflictComparisons: 3 });
    for (let i = 0; i < 4; i++) {
      c.observe({ userId: 'ann', prompt: `q${i}`, response: `answer ${i}?`, reward: 1 });
      c.observe({ userId: 'eve', prompt: `q${i}`, response: `answer ${i}?`, reward: -1 });
      c.observe({ userId: 'bob', prompt: `q${i}`, response: `answer ${i}?`, reward: 1 });
    }
    const conflicts = c.conflicts();
    assert.deepEqual(
      conflicts.map((x) => x.users.join('/')),
      ['ann/eve', 'bob/eve'],
    );
    assert.ok(conflicts.every((x) => x.comparisons === 4 && x.disagreementRate === 1));
  });

  it('the weight never falls below the floor', () => {
    const c = new UserConsensus({ minWeight: 0.2 });
    for (let i = 0; i < 50; i++) {
      c.observe({ userId: 'ann', prompt: `q${i}`, response: 'yes', reward: 1 });
      c.observe({ userId: 'eve', prompt: `q${i}`, response: 'yes', reward: -1 });
    }
    assert.equal(c.weight('eve'), 0.2);
  });
});
