/** How a persona answers: thanks when its check holds, a correction otherwise, a rating only as often as asked. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isAnswer, NOT_AN_ANSWER, react, REPEATING, satisfies } from '../../../eval/reaction.ts';
import { answersPrompt, isWordSalad, repeatsItself } from '../../../eval/answers-prompt.ts';
import { createEmbeddedJudge } from '../../../processors/index.ts';
import { examplePair } from '../../support/fixtures.ts';
import { parsedPersona, personaSpec } from '../../support/persona-spec.ts';

const sue = parsedPersona(
  personaSpec(
    'short-sue',
    'at most 3 words',
    { max_words: 3 },
    { satisfied: ['Thanks!', 'Perfect.'], corrections: ['Too long.', 'Shorter, please.'] },
  ),
);

/** A scripted rand(): the values in turn. */
const script = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length];
};

/** The embedded judge reads each of these user replies as a correction (−1). */
function judgedAsCorrections(texts: readonly string[]): void {
  const judge = createEmbeddedJudge({ mode: 'combined' });
  for (const text of texts)
    assert.equal(
      judge.evaluate(examplePair({ nextState: [{ role: 'USER', content: text, toolCallId: null }], feedback: [] })).score,
      -1,
      text,
    );
}

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

test('a reply that does not answer the question satisfies no one: a "that does not answer" correction the judge scores −1', () => {
  const six = parsedPersona(personaSpec('sue', 'short', { max_words: 6 }));
  assert.equal(answersPrompt('how do tides work?', 'The moon pulls the oceans.'), false, 'no content word of the question');
  assert.equal(answersPrompt('how do tides work?', 'Tides rise and fall with the moon.'), true);
  assert.equal(answersPrompt('what is inflation?', 'You are a helpful assistant.'), false);
  assert.equal(answersPrompt('hi!', 'Hello there.'), true, 'a question without content words takes any reply');
  assert.equal(answersPrompt('what is inflation?', '  '), false);
  // A restated question names the topic and is short, but says nothing (replies a model learning brevity gave).
  assert.equal(answersPrompt('What is inflation?', 'What is inflation?'), false, 'the question back');
  assert.equal(answersPrompt('What is inflation?', 'inflation.'), false);
  assert.equal(answersPrompt('Why do we dream?', 'We dream.'), false);
  assert.equal(answersPrompt('How does a bicycle stay upright?', 'A bicycle stays upright.'), false, 'stays meets stay');
  assert.equal(answersPrompt('What is a black hole?', 'A black hole is a dark hole.'), true, 'thin, but it adds a word');
  assert.equal(satisfies(six, 'What is inflation?', 'what is inflation?'), false);
  assert.equal(satisfies(six, 'You are a helpful assistant.', 'what is inflation?'), false);
  assert.equal(satisfies(six, 'Inflation: prices rising.', 'what is inflation?'), true);
  const r = react(six, 'You are a helpful assistant.', () => 0, 0, 'what is inflation?');
  assert.equal(r.satisfied, false);
  assert.ok(NOT_AN_ANSWER.includes(r.text));
  judgedAsCorrections(NOT_AN_ANSWER);
});

test('a reply that loops is no answer, even when it names the topic and meets the check: a correction the judge scores −1', () => {
  const yara = parsedPersona(
    personaSpec(
      'yara',
      'you at least three times',
      { regex_count_at_least: [{ regex: '\\byou\\b', flags: 'i' }, 3] },
      { corrections: ['Talk to me, please.'] },
    ),
  );
  // Replies seen after training on this persona (results/eval/real-model/kl025-other-1seed).
  const looping =
    'To save money each month, you can plan your life. You can plan your life. You can plan your life. You can plan your life.';
  const fine =
    'To save money each month, you can set a budget, you can cook at home more often, and you can move a fixed sum to savings on payday.';
  assert.equal(repeatsItself(looping), true);
  assert.equal(repeatsItself(fine), false);
  assert.equal(repeatsItself('Yes. Yes. Yes.'), false, 'too short to tell');
  assert.equal(answersPrompt('how do I save money each month?', looping), true, 'it does name the topic');
  assert.equal(satisfies(yara, looping, 'how do I save money each month?'), false);
  assert.equal(satisfies(yara, fine, 'how do I save money each month?'), true);
  assert.equal(satisfies(yara, looping), false, 'a loop is no answer to any question');
  const r = react(yara, looping, () => 0, 0, 'how do I save money each month?');
  assert.equal(r.satisfied, false);
  assert.ok(REPEATING.includes(r.text));
  judgedAsCorrections(REPEATING);
});

test('word salad that names the topic is no answer: most of its words must be English words', () => {
  // Replies seen after training (results/eval/real-model/*/replies.md): each names the topic and adds a word.
  const salad = ['Cats are obligidivitis necrobaprax asiofelis.', 'A router is a findereader.', 'bread riseisin of yeast'];
  const questions = ['why do cats sleep so much?', 'what does a router do?', 'how does bread rise?'];
  for (const [i, reply] of salad.entries()) {
    assert.equal(answersPrompt(questions[i], reply), true, `the lexical check alone takes "${reply}"`);
    assert.equal(isWordSalad(reply), true, reply);
    assert.equal(isAnswer(reply, questions[i]), false, reply);
  }
  // Names, possessives, units and a word or two the list lacks stay answers.
  for (const fine of [
    "The sky's blue comes from Rayleigh scattering of sunlight by the air's molecules.",
    'Knead 500 g of flour with yeast, salt and water, let it rise, then bake it at 220 °C.',
    'Cats sleep a lot because they are crepuscular hunters that save energy between hunts.',
  ])
    assert.equal(isWordSalad(fine), false, fine);
  assert.equal(isWordSalad('42 — 7.'), false, 'nothing to judge: other checks decide');
  assert.equal(isWordSalad('מקקקק קוגר שלום'), true, 'another script is no English answer');
  const r = react(sue, salad[0], () => 0, 0, questions[0]);
  assert.ok(NOT_AN_ANSWER.includes(r.text));
});
