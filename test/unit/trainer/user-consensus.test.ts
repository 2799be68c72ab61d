import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizePrompt, responseFeatures, UserConsensus } from '../../../trainer/user-consensus.ts';

const TOPICS = [
  'kafka',
  'sorting lists',
  'a joke',
  'reinforcement learning',
  'colours',
  'rust',
  'cooking rice',
  'trains',
  'music',
  'gravity',
  'rome',
  'primes',
];
const shortReply = (i: number, t: string) => [`Sure: ${t}.`, `It is ${t}.`, `${t}, done.`, `Yes, ${t}.`][i % 4];
const longReply = (i: number, t: string) =>
  `Well, there is quite a lot to say about ${t}. First, consider the background of ${t} and why people care about it. ` +
  `Then there are ${i + 2} details worth explaining carefully, with examples and caveats, before we conclude.`;

/**
 * Private chats: every user asks their own prompts and is shown their own replies (no two turns
 * alike). ann, bob and cid reward short replies and punish long ones; eve does the opposite.
 */
function privateChats(c: UserConsensus, rounds: number, users = ['ann', 'bob', 'cid', 'eve'], contrarian = 'eve'): void {
  let k = 0;
  for (let r = 0; r < rounds; r++) {
    for (const u of users) {
      const t = TOPICS[(k * 7) % TOPICS.length];
      k++;
      const likesShort = u !== contrarian;
      c.observe({ userId: u, prompt: `${u}: tell me about ${t} (${r})`, response: shortReply(k, t), reward: likesShort ? 1 : -1 });
      c.observe({ userId: u, prompt: `${u}: more on ${t} please (${r})`, response: longReply(k, t), reward: likesShort ? -1 : 1 });
    }
  }
}

const byUser = (c: UserConsensus) => Object.fromEntries(c.stats().map((s) => [s.userId, s]));

describe('responseFeatures', () => {
  it('is a unit vector; replies of one kind are closer than replies of different kinds', () => {
    const norm = (x: Float32Array) => Math.sqrt(x.reduce((s, v) => s + v * v, 0));
    const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i], 0) / (norm(a) * norm(b));
    const a = responseFeatures(shortReply(0, 'kafka'));
    assert.ok(Math.abs(norm(a) - 1) < 1e-5);
    assert.equal(a.length, 512);
    const b = responseFeatures(shortReply(1, 'gravity'));
    const l = responseFeatures(longReply(1, 'kafka'));
    assert.ok(cos(a, b) > cos(a, l), `short/short ${cos(a, b)} > short/long ${cos(a, l)}`);
    // How a reply ends is part of its kind.
    const q = responseFeatures('Paris is the capital. Shall I say more?');
    const q2 = responseFeatures('Rust has ownership. Want an example?');
    const s2 = responseFeatures('Rust has ownership. Here is an example.');
    assert.ok(cos(q, q2) > cos(q, s2));
    assert.equal(responseFeatures('', 64).length, 64);
  });
});

describe('UserConsensus: preference vectors (private chats)', () => {
  it('three users reward short replies, one rewards long ones: the contrarian sinks, the others stay near the top', () => {
    const c = new UserConsensus();
    privateChats(c, 6);
    const s = byUser(c);
    for (const u of ['ann', 'bob', 'cid']) {
      assert.equal(s[u].agreements + s[u].disagreements, 0, 'no exact comparable turns in private chats');
      assert.ok(s[u].agreement! > 0.5, `${u} agrees with the others (cos ${s[u].agreement})`);
      assert.ok(s[u].weight > 0.85, `${u} weight ${s[u].weight} above the 0.8 prior`);
    }
    assert.ok(s.eve.agreement! < -0.5, `eve opposes the consensus (cos ${s.eve.agreement})`);
    // Hand-checked: eve's f is 0 (cos ≤ −0.5), her evidence 0.5 × min(12, 36) decayed ≈ 5.9 turns, so
    // her weight is (4 + 0) / (5 + 5.9) ≈ 0.37.
    assert.ok(Math.abs(s.eve.weight - 4 / (5 + 0.5 * s.eve.ratedTurns)) < 1e-9, `eve ${s.eve.weight}`);
    assert.ok(s.eve.weight < 0.4);
    // More evidence: eve keeps sinking, the others stay put.
    const more = new UserConsensus();
    privateChats(more, 24);
    const m = byUser(more);
    assert.ok(m.eve.weight < 0.15, `eve after 48 rated turns: ${m.eve.weight}`);
    for (const u of ['ann', 'bob', 'cid']) assert.ok(m[u].weight > 0.9, `${u} ${m[u].weight}`);
  });

  it('reports the contrarian in conflict with each of the others, and no one else', () => {
    const c = new UserConsensus();
    privateChats(c, 6);
    const conflicts = c.conflicts();
    assert.deepEqual(conflicts.map((x) => x.users.join('/')).sort(), ['ann/eve', 'bob/eve', 'cid/eve']);
    for (const x of conflicts) {
      assert.ok(x.similarity! <= -0.25, `${x.users} cos ${x.similarity}`);
      assert.equal(x.comparisons, 0, 'found by preferences, not by exact turns');
    }
  });

  it('needs enough evidence before reporting a conflict', () => {
    const c = new UserConsensus({ minConflictEvidence: 8 });
    privateChats(c, 3); // 6 rated turns each
    assert.deepEqual(c.conflicts(), []);
    assert.ok(c.weight('eve') < c.weight('ann'), 'the weights already move');
  });

  it('a new user starts at the prior (4/5 = 0.8), also alongside users with opinions', () => {
    const c = new UserConsensus();
    assert.equal(c.weight('nobody'), 0.8);
    privateChats(c, 4);
    assert.equal(c.weight('nobody'), 0.8);
    // One rated turn moves a newcomer only a little: evidence 0.5 against a prior of 5, so the
    // weight stays within [4 / 5.5, 4.5 / 5.5] = [0.727, 0.818] whatever the turn.
    c.observe({ userId: 'new', prompt: 'hello', response: 'Hi, short.', reward: 1 });
    const w = c.weight('new');
    assert.ok(w >= 4 / 5.5 - 1e-12 && w <= 4.5 / 5.5 + 1e-12, `newcomer ${w}`);
    c.observe({ userId: null, prompt: 'hi', response: 'Hello!', reward: 1 });
    assert.ok(c.stats().some((s) => s.userId === '(anonymous)'));
  });

  it('zero rewards carry no opinion', () => {
    const c = new UserConsensus();
    privateChats(c, 4, ['ann', 'bob', 'cid']);
    for (let i = 0; i < 20; i++)
      c.observe({ userId: 'zed', prompt: `q${i}`, response: longReply(i, TOPICS[i % TOPICS.length]), reward: 0 });
    const s = byUser(c);
    assert.equal(s.zed.samples, 20);
    assert.equal(s.zed.ratedTurns, 0);
    assert.equal(s.zed.agreement, null);
    assert.equal(s.zed.weight, 0.8);
    assert.ok(!c.conflicts().some((x) => x.users.includes('zed')));
    // And they change nobody else's weight.
    const ref = new UserConsensus();
    privateChats(ref, 4, ['ann', 'bob', 'cid']);
    assert.equal(c.weight('ann'), ref.weight('ann'));
  });

  it('a lone user has no consensus to agree with: prior weight', () => {
    const c = new UserConsensus();
    privateChats(c, 5, ['ann']);
    const s = byUser(c);
    assert.equal(s.ann.agreement, null);
    assert.equal(s.ann.weight, 0.8);
  });

  it('memory is bounded: users beyond maxUsers are forgotten, least recently seen first', () => {
    const c = new UserConsensus({ maxUsers: 5, maxPrompts: 10 });
    for (let i = 0; i < 40; i++)
      c.observe({ userId: `u${i}`, prompt: `p${i}`, response: shortReply(i, TOPICS[i % TOPICS.length]), reward: i % 2 ? 1 : -1 });
    assert.equal(c.size, 5);
    assert.deepEqual(
      c.stats().map((s) => s.userId),
      ['u35', 'u36', 'u37', 'u38', 'u39'],
    );
    assert.equal(c.weight('u0'), 0.8, 'a forgotten user is new again');
  });

  it('the weight depends on the turns seen, not on when it is asked for', () => {
    const once = new UserConsensus();
    privateChats(once, 6);
    const often = new UserConsensus();
    let k = 0;
    for (let r = 0; r < 6; r++) {
      for (const u of ['ann', 'bob', 'cid', 'eve']) {
        const t = TOPICS[(k * 7) % TOPICS.length];
        k++;
        const s = u === 'eve' ? -1 : 1;
        often.observe({ userId: u, prompt: `${u}: tell me about ${t} (${r})`, response: shortReply(k, t), reward: s });
        often.weight(u);
        often.observe({ userId: u, prompt: `${u}: more on ${t} please (${r})`, response: longReply(k, t), reward: -s });
      }
    }
    for (const u of ['ann', 'eve']) assert.ok(Math.abs(once.weight(u) - often.weight(u)) < 1e-12);
  });

  it('the floor holds', () => {
    const c = new UserConsensus({ minWeight: 0.5 });
    privateChats(c, 24);
    assert.equal(c.weight('eve'), 0.5);
  });
});

/** Five exact comparable turns: ann, bob and cid like the reply; eve, the adversary, dislikes the very same reply. */
function eveAgainstTheOthers(c: UserConsensus): void {
  const prompts = ['What is Kafka?', 'How do I sort a list?', 'Tell me a joke', 'Explain RL', 'Name a colour'];
  for (const [i, p] of prompts.entries()) {
    const good = `Here is an answer number ${i}. Does that help?`;
    for (const u of ['ann', 'bob', 'cid']) c.observe({ userId: u, prompt: p, response: good, reward: 1 });
    c.observe({ userId: 'eve', prompt: p, response: good, reward: -1 });
  }
}

describe('UserConsensus: exact comparable turns (the stronger, additional signal)', () => {
  it('users who agree keep high weights; one who contradicts the consensus sinks (exact turns only: the former method)', () => {
    const c = new UserConsensus({ preferences: false });
    eveAgainstTheOthers(c);
    const s = byUser(c);
    assert.equal(s.eve.disagreements, 5);
    assert.equal(s.eve.agreements, 0);
    assert.equal(s.eve.weight, 4 / 10, 'Beta(4+0, 1+5) mean');
    assert.equal(s.cid.agreements, 5);
    assert.equal(s.cid.weight, 9 / 10);
    // bob agreed with ann each time (1 comparison each), ann had nobody before her.
    assert.equal(s.ann.agreements, 0);
    assert.ok(s.bob.weight > s.eve.weight);
  });

  it('with preferences on, the same turns count both ways: eve sinks further', () => {
    const c = new UserConsensus();
    eveAgainstTheOthers(c);
    const s = byUser(c);
    // eve only punished what the others only rewarded: her preference is exactly opposed (cos −1, f 0),
    // evidence 0.5 × 5 decayed turns: (4 + 0 + 0) / (5 + 5 + 0.5·5·decay).
    assert.ok(Math.abs(s.eve.agreement! + 1) < 1e-5);
    assert.ok(Math.abs(s.eve.weight - 4 / (10 + 0.5 * s.eve.ratedTurns)) < 1e-9);
    assert.ok(s.eve.weight < 0.4);
    assert.ok(s.cid.weight > 0.9);
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

  it('zero rewards are not compared', () => {
    const c = new UserConsensus();
    c.observe({ userId: 'ann', prompt: 'p', response: 'r r r', reward: 0 });
    c.observe({ userId: 'bob', prompt: 'p', response: 'r r r', reward: 1 });
    assert.deepEqual(
      c.stats().map((s) => s.agreements + s.disagreements),
      [0, 0],
    );
  });

  it('reports users who disagree on exact turns, with the rate', () => {
    const c = new UserConsensus({ minConflictComparisons: 3, preferences: false });
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
    assert.ok(conflicts.every((x) => x.comparisons === 4 && x.disagreementRate === 1 && x.similarity === null));
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
