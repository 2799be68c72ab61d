/**
 * How a persona answers a reply, as people do: thanks when it answers the question and satisfies
 * the hidden preference, a correction in plain words otherwise, and now and then an explicit 👍/👎.
 */
import { answersPrompt, isWordSalad, repeatsItself } from './answers-prompt.ts';
import type { Persona } from './persona.ts';

/** What a persona says to a reply that does not answer the question at all. */
export const NOT_AN_ANSWER = ["That doesn't answer my question.", 'No, that is not what I asked. Please answer the question.'];

/** What a persona says to a reply that keeps repeating itself. */
export const REPEATING = [
  'You keep repeating yourself. Please just answer the question.',
  "You're going round in circles, that's no answer.",
];

/**
 * The reply is an answer: it shares a content word with `question` (when given), adds one of its
 * own, does not loop, and is written in English words.
 */
export function isAnswer(reply: string, question?: string): boolean {
  return (question === undefined || answersPrompt(question, reply)) && !repeatsItself(reply) && !isWordSalad(reply);
}

/** The persona is satisfied: the reply answers `question` (when given) and meets the preference. */
export function satisfies(persona: Pick<Persona, 'accepts'>, reply: string, question?: string): boolean {
  return isAnswer(reply, question) && persona.accepts(reply);
}

export interface Reaction {
  satisfied: boolean;
  /** The user's next message. */
  text: string;
  /** An explicit 👍 (1) / 👎 (−1), or null. */
  rating: 1 | -1 | null;
}

/**
 * The persona's reaction to `reply`. `rand` (uniform in [0, 1)) picks the message and whether a
 * rating comes with it, so a seeded generator replays the same conversation. With `question`,
 * a reply that does not answer it gets a "that doesn't answer my question" correction.
 * @param ratingRate probability of a 👍/👎 with the message. @default 0.25
 */
export function react(
  persona: Pick<Persona, 'accepts' | 'satisfied' | 'corrections'>,
  reply: string,
  rand: () => number,
  ratingRate = 0.25,
  question?: string,
): Reaction {
  const answered = isAnswer(reply, question);
  const ok = answered && persona.accepts(reply);
  const list = ok ? persona.satisfied : answered ? persona.corrections : repeatsItself(reply) ? REPEATING : NOT_AN_ANSWER;
  const text = list[Math.floor(rand() * list.length)];
  const rating = rand() < ratingRate ? (ok ? 1 : -1) : null;
  return { satisfied: ok, text, rating };
}
