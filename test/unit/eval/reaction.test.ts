/** How a persona answers: thanks when its check holds, a correction otherwise, a rating only as often as asked. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePersonas } from '../../../eval/persona.ts';
import { react } from '../../../eval/reaction.ts';

const [sue] = parsePersonas({
  personas: [
    {
      name: 'short-sue',
      preference: 'at most 3 words',
      check: { max_words: 3 },
      satisfied: ['Thanks!', 'Perfect.'],
      corrections: ['Too long.', 'Shorter, please.'],
      prompts: ['a', 'b', 'c', 'd'],
    },
  ],
});

/** A scripted rand(): the values in turn. */
const script = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length];
};

test('react: thanks when satisfied, a correction when not, with a 👍/👎 that agrees', () => {
  assert.deepEqual(react(sue, 'Short.', script(0, 0), 1), { satisfied: true, text: 'Thanks!', rating: 1 });
  assert.deepEqual(react(sue, 'far too many words here', script(0.6, 0), 1), { satisfied: false, text: 'Shorter, please.', rating: -1 });
  assert.deepEqual(
    react(sue, '', script(0, 0.99), 0.25),
    { satisfied: false, text: 'Too long.', rating: null },
    'an empty reply satisfies nobody',
  );
});

test('react: a rating comes with about ratingRate of the reactions, and every message gets picked', () => {
  let s = 42;
  const rand = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const n = 4000;
  let rated = 0;
  const texts = new Set<string>();
  for (let i = 0; i < n; i++) {
    const r = react(sue, i % 2 ? 'ok' : 'one two three four', rand);
    if (r.rating !== null) rated++;
    texts.add(r.text);
    assert.equal(r.satisfied, i % 2 === 1);
  }
  assert.ok(Math.abs(rated / n - 0.25) < 0.03, `rated share ${rated / n}`);
  assert.deepEqual([...texts].sort(), ['Perfect.', 'Shorter, please.', 'Thanks!', 'Too long.']);
});
