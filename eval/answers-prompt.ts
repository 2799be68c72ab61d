/**
 * Does a reply answer the question at all? A person with a style preference still wants an
 * answer: a reply that shares no content word with the question ("You are a helpful
 * assistant.", an empty or off-topic reply) satisfies no persona, however short or formal it
 * is. Without this, learning the style can collapse into a stock sentence that fits every check.
 * Nor does a reply that goes round in circles ("You can save money. You can save money. …"):
 * repeating a phrase meets a count ("you" three times) or a topic word as well as an answer does.
 * Nor does a reply that only restates the question ("What is inflation?", "We dream."): it names
 * the topic and is as short as any length check wants, and a model learning brevity found it.
 * Nor does word salad ("Cats are obligidivitis necrobaprax asiofelis."): a topic word and a word
 * of its own are not an answer when most of its words are no English words.
 */

import { createRequire } from 'node:module';

const STOP = new Set(
  'about above after again also because been before being best between both could does doing down during each from have having here how into just like make more most much must need only other over same should some such than that their them then there these they this those through under very want what when where which while will with would your yours good tell give know'.split(
    ' ',
  ),
);

/** The question's content words: 4+ letters, not a function word, lower-cased. */
export function contentWords(question: string): string[] {
  return [...new Set((question.toLowerCase().match(/\p{L}{4,}/gu) ?? []).filter((w) => !STOP.has(w)))];
}

/**
 * True when the reply mentions one of the question's content words (its first 4 letters, so
 * "tides" meets "tide" and "cooking" meets "cook") and says something the question did not: a
 * content word of its own. A question without content words accepts any non-empty reply.
 */
export function answersPrompt(question: string, reply: string): boolean {
  if (!reply.trim()) return false;
  const words = contentWords(question);
  if (words.length === 0) return true;
  const said = reply.toLowerCase();
  const stems = new Set(words.map((w) => w.slice(0, 4)));
  return words.some((w) => said.includes(w.slice(0, 4))) && contentWords(reply).some((w) => !stems.has(w.slice(0, 4)));
}

/** Below this share of distinct word trigrams a reply repeats itself (1 of 144 base replies measured, a looping one). */
export const MIN_DISTINCT_TRIGRAMS = 0.6;

/** True when a reply of 12 words or more has fewer than {@link MIN_DISTINCT_TRIGRAMS} distinct word trigrams. */
export function repeatsItself(reply: string): boolean {
  const words = reply.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  if (words.length < 12) return false;
  const trigrams = new Set<string>();
  for (let i = 0; i + 2 < words.length; i++) trigrams.add(`${words[i]} ${words[i + 1]} ${words[i + 2]}`);
  return trigrams.size / (words.length - 2) < MIN_DISTINCT_TRIGRAMS;
}

/** Below this share of English words (of 3+ letters) a reply is word salad: it flags 2 of 1,574 stored base replies, both nonsense. */
export const MIN_ENGLISH_WORDS = 0.75;

let english: Set<string> | undefined;

/** The word list (~275,000 English words, `an-array-of-english-words`), loaded on first use. */
function englishWords(): Set<string> {
  english ??= new Set(createRequire(import.meta.url)('an-array-of-english-words') as string[]);
  return english;
}

/** True when fewer than {@link MIN_ENGLISH_WORDS} of the reply's words of 3+ letters are English words. */
export function isWordSalad(reply: string): boolean {
  const words = reply.match(/\p{L}{3,}/gu);
  if (!words) return false;
  const known = englishWords();
  let hits = 0;
  for (const w of words) {
    const lower = w.toLowerCase();
    if (known.has(lower) || known.has(lower.replace(/['’]s$/u, ''))) hits++;
  }
  return hits / words.length < MIN_ENGLISH_WORDS;
}
