/** The personas' hidden checks and reactions, the persona file format, and the paired test. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { TOPICS } from '../../../trainer/corpus.ts';
import { loadPersonas, personaPrompt, react, satisfies, splitTopics, type Persona } from '../../../eval/personas.ts';
import { pairedPermutationTest } from '../../../eval/stats.ts';

const sam = { name: 'Sam' };

test('satisfies: each preference is checked on the reply as the persona sees it', () => {
  assert.equal(satisfies('short', 'Tea: boil water, steep 3 min.', sam), true);
  assert.equal(satisfies('short', 'x'.repeat(61), sam), false);
  assert.equal(satisfies('question', 'Steep it for three minutes. Want more tips? 🙂', sam), true, 'a trailing emoji after the ?');
  assert.equal(satisfies('question', 'Steep it for three minutes.', sam), false);
  assert.equal(satisfies('greet', 'Hi Sam! Steep it.', sam), true);
  assert.equal(satisfies('greet', 'Hi Alex! Steep it.', sam), false, 'another name is no greeting for Sam');
  assert.equal(satisfies('greet', 'Steep it, Sam.', sam), false);
  assert.equal(satisfies('noEmoji', 'Steep it.', sam), true);
  assert.equal(satisfies('noEmoji', 'Steep it ✨', sam), false);
  assert.equal(satisfies('formal', 'Certainly. Steep it for three minutes.', sam), true);
  assert.equal(satisfies('short', '   ', sam), false, 'an empty reply satisfies nobody');
});

test('react: thanks when satisfied, a correction when not, a rating only as often as asked', () => {
  const p: Persona = { id: 'b', name: 'Bea', preference: 'short', description: '', corrections: ['Too long.'], thanks: ['Thanks!'] };
  const always = () => 0;
  assert.deepEqual(react(p, 'Short.', always, 1), { satisfied: true, text: 'Thanks!', rating: 1 });
  assert.deepEqual(react(p, 'x'.repeat(80), always, 1), { satisfied: false, text: 'Too long.', rating: -1 });
  assert.equal(react(p, 'Short.', () => 0.99, 0.25).rating, null);
});

test('prompts: a greet persona introduces itself; held-out topics are never training topics', () => {
  const base: Omit<Persona, 'preference'> = { id: 's', name: 'Sam', description: '', corrections: ['x'], thanks: ['y'] };
  assert.match(personaPrompt({ ...base, preference: 'greet' }, TOPICS[0], 0), /^Sam here\. /);
  assert.doesNotMatch(personaPrompt({ ...base, preference: 'short' }, TOPICS[0], 0), /Sam/);
  const { train, heldOut } = splitTopics(8);
  assert.equal(heldOut.length, 8);
  assert.ok(heldOut.every((t) => !train.includes(t)));
  assert.equal(train.length + heldOut.length, TOPICS.length);
});

test('loadPersonas: the shipped file, and a bad file named with what is wrong', async () => {
  const shipped = await loadPersonas();
  assert.deepEqual(shipped.map((p) => p.preference).sort(), ['formal', 'greet', 'noEmoji', 'question', 'short']);
  const dir = await mkdtemp(join(tmpdir(), 'ts-personas-'));
  try {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ personas: [{ id: 'x', name: 'X', preference: 'long', corrections: ['a'], thanks: ['b'] }] }));
    await assert.rejects(loadPersonas(bad), /persona x: unknown preference long/);
    await writeFile(bad, JSON.stringify({ personas: [] }));
    await assert.rejects(loadPersonas(bad), /has no personas/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('pairedPermutationTest: exact over all sign patterns', () => {
  // Four runs that all improved by the same amount: only the all-plus and all-minus patterns are as extreme.
  const r = pairedPermutationTest([0.1, 0.2, 0.3, 0.4], [0.3, 0.4, 0.5, 0.6]);
  assert.equal(r.exact, true);
  assert.equal(r.n, 4);
  assert.ok(Math.abs(r.meanDiff - 0.2) < 1e-12);
  assert.equal(r.p, 2 / 16);
  assert.equal(pairedPermutationTest([0.5, 0.5], [0.5, 0.5]).p, 1);
});
