import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BASE_RATES,
  HELD_OUT_NAMES,
  REAL_NAMES,
  SHIPPED_NAMES,
  corpus,
  drawName,
  generatedName,
  type Exchange,
} from '../../../trainer/corpus.ts';
import { mulberry32 } from '../../../core/index.ts';
import { unseenNames } from '../../../eval/name-copy.ts';

const take = (n: number, seed = 0, names: 'shipped' | 'many' = 'many'): Exchange[] => {
  const it = corpus({ seed, names });
  return Array.from({ length: n }, () => it.next().value!);
};
const userText = (ex: Exchange): string => ex.messages[ex.messages.length - 1].content;
const promptName = (ex: Exchange): string | null => /^(\p{L}+) here\. /u.exec(userText(ex))?.[1] ?? null;

const sample = take(6000);

test('corpus: the same seed gives the same exchanges, another seed others', () => {
  assert.deepEqual(take(50, 7), take(50, 7));
  assert.notDeepEqual(take(50, 7), take(50, 8));
});

test('corpus: a greeting uses the name from the prompt, and only a named prompt is greeted', () => {
  let greeted = 0;
  for (const ex of sample) {
    const name = promptName(ex);
    if (!ex.style.greet) {
      assert.doesNotMatch(ex.reply, /^(?:Hi|Hello) /);
      continue;
    }
    greeted++;
    assert.ok(name, `greeted without a name: ${userText(ex)}`);
    assert.ok(ex.reply.startsWith(ex.style.formal ? `Hello ${name}. ` : `Hi ${name}! `), ex.reply);
  }
  assert.ok(greeted > 600, `${greeted} greetings`);
});

test('corpus: names come from a large set, none dominates, copying is the only way to predict them', () => {
  const counts = new Map<string, number>();
  let named = 0;
  for (const ex of sample) {
    const name = promptName(ex);
    if (!name) continue;
    named++;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  assert.ok(counts.size > 1000, `${counts.size} distinct names in ${named} named prompts`);
  const top = Math.max(...counts.values());
  assert.ok(top / named < 0.02, `most frequent name has ${top} of ${named}`);
  // Half generated: many names never seen before.
  assert.ok([...counts.keys()].filter((n) => !REAL_NAMES.includes(n)).length > 800);
});

test('corpus: held-out names ("Sam", the named-sam persona) never occur', () => {
  for (const ex of sample) {
    const name = promptName(ex);
    if (name) assert.ok(!HELD_OUT_NAMES.includes(name), name);
    assert.doesNotMatch(ex.reply, /\bSam\b/);
    assert.doesNotMatch(userText(ex), /\bSam\b/);
  }
  const rand = mulberry32(3);
  for (let i = 0; i < 20_000; i++) assert.ok(!HELD_OUT_NAMES.includes(drawName(rand)));
  for (const n of REAL_NAMES) assert.ok(!HELD_OUT_NAMES.includes(n), n);
});

test('corpus: generated names are pronounceable two-syllable names; the name-copy check uses other shapes', () => {
  const rand = mulberry32(1);
  const names = Array.from({ length: 2000 }, () => generatedName(rand));
  for (const n of names) assert.match(n, /^[A-Z][a-z]{3,6}$/);
  assert.ok(new Set(names).size > 1500);
  const unseen = unseenNames(12);
  for (const n of unseen) assert.ok(!REAL_NAMES.includes(n) && !names.includes(n), n);
});

test('corpus: plain exchanges keep the documented base rates', () => {
  const plain = sample.filter((ex) => ex.instructed.length === 0);
  const named = plain.filter((ex) => promptName(ex) !== null);
  const rate = (list: Exchange[], f: (ex: Exchange) => boolean): number => list.filter(f).length / list.length;
  assert.ok(Math.abs(plain.length / sample.length - 0.6) < 0.03);
  assert.ok(Math.abs(named.length / plain.length - 0.4) < 0.03);
  assert.ok(Math.abs(rate(named, (ex) => ex.style.greet) - BASE_RATES.greet) < 0.04);
  for (const p of ['short', 'question', 'noEmoji', 'formal'] as const)
    assert.ok(Math.abs(rate(plain, (ex) => ex.style[p]) - BASE_RATES[p]) < 0.03, p);
});

test('corpus: greetDrillShare adds "greet me by name" exchanges that copy the name', () => {
  const it = corpus({ seed: 2, greetDrillShare: 0.5, names: 'many' });
  const list = Array.from({ length: 2000 }, () => it.next().value!);
  const drills = list.filter((ex) => ex.instructed.length === 1 && ex.instructed[0] === 'greet');
  assert.ok(drills.length > 1000, `${drills.length}`);
  for (const ex of drills) {
    const name = promptName(ex)!;
    assert.ok(ex.reply.startsWith(ex.style.formal ? `Hello ${name}. ` : `Hi ${name}! `), ex.reply);
  }
});

test('corpus: by default the names are the 16 of the shipped base, so `turnstream pretrain` rebuilds that base', () => {
  const names = new Set(
    take(3000, 0, 'shipped')
      .map(promptName)
      .filter((n): n is string => n !== null),
  );
  assert.deepEqual([...names].sort(), [...SHIPPED_NAMES].sort());
  const dflt = corpus({ seed: 5 });
  assert.deepEqual(
    Array.from({ length: 200 }, () => dflt.next().value!),
    take(200, 5, 'shipped'),
  );
});
