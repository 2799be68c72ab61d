/**
 * How a persona answers a reply, as people do: thanks when it satisfies the hidden preference, a
 * correction in plain words otherwise, and now and then an explicit 👍/👎.
 */
import type { Persona } from './persona.ts';

export interface Reaction {
  satisfied: boolean;
  /** The user's next message. */
  text: string;
  /** An explicit 👍 (1) / 👎 (−1), or null. */
  rating: 1 | -1 | null;
}

/**
 * The persona's reaction to `reply`. `rand` (uniform in [0, 1)) picks the message and whether a
 * rating comes with it, so a seeded generator replays the same conversation.
 * @param ratingRate probability of a 👍/👎 with the message. @default 0.25
 */
export function react(
  persona: Pick<Persona, 'accepts' | 'satisfied' | 'corrections'>,
  reply: string,
  rand: () => number,
  ratingRate = 0.25,
): Reaction {
  const ok = persona.accepts(reply);
  const list = ok ? persona.satisfied : persona.corrections;
  const text = list[Math.floor(rand() * list.length)];
  const rating = rand() < ratingRate ? (ok ? 1 : -1) : null;
  return { satisfied: ok, text, rating };
}
