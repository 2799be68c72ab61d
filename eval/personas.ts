/**
 * Simulated users for the evaluation (ALGORITHMS.md §8): each persona has one hidden, checkable
 * preference, asks questions, and reacts as people do — thanks when satisfied, a correction with
 * the reason when not, and now and then a 👍/👎.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CASUAL_MARKERS, PROPERTIES, TOPICS, type Property, type Topic } from '../trainer/corpus.ts';

export interface Persona {
  id: string;
  /** The name the persona goes by (it introduces itself when its preference is a greeting). */
  name: string;
  preference: Property;
  description: string;
  /** What it says when a reply misses its preference (one is picked at random). */
  corrections: string[];
  /** What it says when a reply satisfies it. */
  thanks: string[];
}

export const DEFAULT_PERSONAS_FILE = fileURLToPath(new URL('./personas.json', import.meta.url));

export async function loadPersonas(file = DEFAULT_PERSONAS_FILE): Promise<Persona[]> {
  const parsed = JSON.parse(await readFile(file, 'utf8')) as { personas?: Persona[] };
  const list = parsed.personas ?? [];
  for (const p of list) {
    if (!PROPERTIES.includes(p.preference))
      throw new Error(`persona ${p.id}: unknown preference ${p.preference}; expected one of ${PROPERTIES.join(', ')}`);
    if (!p.corrections?.length || !p.thanks?.length) throw new Error(`persona ${p.id}: needs corrections and thanks`);
  }
  if (list.length === 0) throw new Error(`${file} has no personas`);
  return list;
}

/** Longest reply a "short" persona accepts, in characters. */
export const SHORT_MAX_CHARS = 60;
const EMOJI = /\p{Extended_Pictographic}/u;
const TRAILING_EMOJI = /[\s\p{Extended_Pictographic}\u{FE0F}\u{200D}]+$/u;

/** Whether a reply satisfies a preference — the hidden check, never shown to the model. */
export function satisfies(preference: Property, reply: string, persona: Pick<Persona, 'name'>): boolean {
  const text = reply.trim();
  if (text.length === 0) return false;
  switch (preference) {
    case 'short':
      return [...text].length <= SHORT_MAX_CHARS;
    case 'question':
      return text.replace(TRAILING_EMOJI, '').endsWith('?');
    case 'greet':
      return new RegExp(`^(?:hi|hello|hey|dear|good (?:morning|day))\\b[ ,]*${persona.name}\\b`, 'i').test(text);
    case 'noEmoji':
      return !EMOJI.test(text);
    case 'formal':
      return !CASUAL_MARKERS.test(text);
  }
}

/** The persona's question: "Sam here. …" for a persona that wants its name used. */
export function personaPrompt(persona: Persona, topic: Topic, variant: number): string {
  const ask = topic.asks[variant % topic.asks.length];
  const text = variant % 2 ? ask.charAt(0).toUpperCase() + ask.slice(1) : ask;
  return persona.preference === 'greet' ? `${persona.name} here. ${text}` : text;
}

export interface Reaction {
  satisfied: boolean;
  /** The user's next message. */
  text: string;
  /** An explicit 👍 (1) / 👎 (−1), or null. */
  rating: number | null;
}

/** How the persona answers a reply. */
export function react(persona: Persona, reply: string, rand: () => number, ratingRate = 0.25): Reaction {
  const ok = satisfies(persona.preference, reply, persona);
  const list = ok ? persona.thanks : persona.corrections;
  const text = list[Math.floor(rand() * list.length)];
  const rating = rand() < ratingRate ? (ok ? 1 : -1) : null;
  return { satisfied: ok, text, rating };
}

/**
 * The split of the corpus topics: the persona talks about `train` topics and the score is taken
 * on `heldOut` ones, never used in an interaction.
 */
export function splitTopics(heldOut = 8): { train: Topic[]; heldOut: Topic[] } {
  // Every 4th topic is held out (deterministic, spread over the list).
  const held = TOPICS.filter((_, i) => i % 4 === 3).slice(0, heldOut);
  return { train: TOPICS.filter((t) => !held.includes(t)), heldOut: held };
}
