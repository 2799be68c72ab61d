/** Personas for tests, as the persona file writes them: the hidden preference and its check, the rest filled in unless given. */
import { parsePersonas, type Persona, type PersonaSpec } from '../../eval/persona.ts';
import type { PersonaCheck } from '../../measure/check-language.ts';

/** A persona entry of the file: one thanks, one correction and four one-letter prompts unless `over` gives them. */
export function personaSpec(name: string, preference: string, check: PersonaCheck, over: Partial<PersonaSpec> = {}): PersonaSpec {
  return { name, preference, check, satisfied: ['Thanks!'], corrections: ['Shorter, please.'], prompts: ['a', 'b', 'c', 'd'], ...over };
}

/** The persona of a file that holds only `spec`, validated and its check compiled (`source` names it in errors). */
export const parsedPersona = (spec: PersonaSpec, source = 'test'): Persona => parsePersonas({ personas: [spec] }, source)[0];

/** A persona the tiny GGUF models of the tests talk to: at most 3 words, real questions as prompts. */
export const terseTom = (): Persona =>
  parsedPersona(
    personaSpec(
      'terse-tom',
      'at most 3 words',
      { max_words: 3 },
      {
        satisfied: ['Great, thanks!'],
        corrections: ['No, too long. Try again.'],
        prompts: ['how do I make tea?', 'what is gravity?', 'how do I cook rice?', 'why is the sky blue?'],
      },
    ),
    'test personas',
  );
