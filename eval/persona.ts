/**
 * Simulated users for the evaluation (docs/design/algorithms.md §8), as an open file format. Each persona has
 * one hidden preference, written as a declarative check (measure/check-language.ts), asks its own prompts
 * and reacts in its own words (reaction.ts): thanks when satisfied, a correction otherwise.
 *
 * ```json
 * {"personas": [{
 *   "name": "short-sue",
 *   "preference": "replies of at most 12 words",
 *   "check": {"max_words": 12},
 *   "satisfied": ["great, short and sweet"],
 *   "corrections": ["too long, keep it under a dozen words"],
 *   "prompts": ["how do tides work", "what is a good breakfast", "…"],
 *   "system": "optional: the system prompt the persona's client sends"
 * }]}
 * ```
 *
 * `preference` is for people reading results; the model and the judge never see it or the check.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { invalidInput, TurnstreamError } from '../core/index.ts';
import { compileCheck, type CheckFn, type PersonaCheck } from '../measure/index.ts';

/** A persona as the file writes it. */
export interface PersonaSpec {
  /** Unique id: letters, digits, `-` and `_` (it names runs, users and model copies). */
  name: string;
  /** The hidden preference in words, for people reading results. */
  preference: string;
  /** The hidden preference as a check on the reply. */
  check: PersonaCheck;
  /** What the persona says when a reply satisfies it (one is picked at random). */
  satisfied: string[];
  /** What it says when a reply misses, stating what it wants in plain words. */
  corrections: string[];
  /** Its questions; a fixed share is held out for scoring and never trained on (splitPrompts). */
  prompts: string[];
  /** The system prompt its client sends, if any. */
  system?: string;
}

/** A validated persona with its check compiled. */
export interface Persona extends PersonaSpec {
  /** Whether a reply satisfies the hidden preference. */
  accepts: CheckFn;
}

/** The personas that need real learning from the real model. */
export const DEFAULT_PERSONAS_FILE = fileURLToPath(new URL('./personas.json', import.meta.url));
/** The five preferences the builtin tiny model's corpus was built around (`--model builtin`). */
export const BUILTIN_PERSONAS_FILE = fileURLToPath(new URL('./personas-builtin.json', import.meta.url));

/** Fewest prompts a persona may have: enough for a held-out split with some left to train on. */
export const MIN_PROMPTS = 4;
/** Share of each persona's prompts held out. */
export const DEFAULT_HELD_OUT = 3 / 8;

const FIELDS = ['name', 'preference', 'check', 'satisfied', 'corrections', 'prompts', 'system'] as const;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function strings(v: unknown, field: string, min: number): string[] {
  const what = `must be an array of at least ${min} non-empty string${min === 1 ? '' : 's'}`;
  if (!Array.isArray(v)) throw invalidInput(`${field} ${what}`, field);
  v.forEach((s, i) => {
    if (typeof s !== 'string' || s.trim() === '') throw invalidInput(`${field}[${i}] must be a non-empty string`, `${field}[${i}]`);
  });
  if (v.length < min) throw invalidInput(`${field} ${what} (has ${v.length})`, field);
  return v as string[];
}

function parseOne(raw: Record<string, unknown>): Persona {
  const unknown = Object.keys(raw).filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown.length) throw invalidInput(`unknown field "${unknown[0]}" (fields: ${FIELDS.join(', ')})`, unknown[0]);
  if (typeof raw.preference !== 'string' || raw.preference.trim() === '')
    throw invalidInput('preference must be a non-empty string (what the persona wants, for people)', 'preference');
  if (raw.check === undefined) throw invalidInput('check is missing', 'check');
  const accepts = compileCheck(raw.check, 'check');
  const satisfied = strings(raw.satisfied, 'satisfied', 1);
  const corrections = strings(raw.corrections, 'corrections', 1);
  const prompts = strings(raw.prompts, 'prompts', MIN_PROMPTS);
  prompts.forEach((p, i) => {
    const first = prompts.indexOf(p);
    // A repeated prompt could land on both sides of the split.
    if (first < i) throw invalidInput(`prompts[${i}] repeats prompts[${first}]`, `prompts[${i}]`);
  });
  if (raw.system !== undefined && (typeof raw.system !== 'string' || raw.system.trim() === ''))
    throw invalidInput('system must be a non-empty string when given', 'system');
  const persona: Persona = {
    name: raw.name as string,
    preference: raw.preference,
    check: raw.check as PersonaCheck,
    satisfied,
    corrections,
    prompts,
    accepts,
  };
  if (raw.system !== undefined) persona.system = raw.system as string;
  return persona;
}

/**
 * Validates a parsed persona file. Throws one `TurnstreamError(INVALID_INPUT)` whose message
 * names the source, the persona and the field:
 * `personas.json: persona "short-sue": check.all[1].max_words must be a positive integer`.
 */
export function parsePersonas(json: unknown, source = 'personas'): Persona[] {
  const bad = (message: string, param?: string): TurnstreamError => invalidInput(`${source}: ${message}`, param);
  if (!isObject(json)) throw bad('must be a JSON object {"personas": [...]}');
  const extra = Object.keys(json).filter((k) => k !== 'personas');
  if (extra.length) throw bad(`unknown top-level field "${extra[0]}" (the file has one field, "personas")`, extra[0]);
  const list = json.personas;
  if (!Array.isArray(list) || list.length === 0) throw bad('"personas" must be a non-empty array', 'personas');
  const seen = new Map<string, number>();
  return list.map((raw, i) => {
    if (!isObject(raw)) throw bad(`personas[${i}] must be an object`, `personas[${i}]`);
    if (typeof raw.name !== 'string' || !NAME.test(raw.name))
      throw bad(`personas[${i}]: name must be 1–64 letters, digits, - and _ (starting with a letter or digit)`, `personas[${i}].name`);
    const name = raw.name;
    if (seen.has(name)) throw bad(`persona "${name}": name is used twice (personas[${seen.get(name)}] and personas[${i}])`, 'name');
    seen.set(name, i);
    try {
      return parseOne(raw);
    } catch (err) {
      if (!(err instanceof TurnstreamError)) throw err;
      throw bad(`persona "${name}": ${err.message}`, err.param);
    }
  });
}

/** Reads and validates a persona file (see parsePersonas for the errors). */
export async function loadPersonas(file = DEFAULT_PERSONAS_FILE): Promise<Persona[]> {
  const text = await readFile(file, 'utf8');
  const source = basename(file);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw invalidInput(`${source}: not JSON: ${(err as Error).message}`, undefined, err);
  }
  return parsePersonas(json, source);
}

export interface SplitOptions {
  /** Share of the prompts held out, in (0, 1). @default 3/8 */
  heldOut?: number;
}

/**
 * The persona's prompts split into the ones it talks with (`train`) and the ones the score is
 * taken on (`heldOut`, never used in an interaction). Fixed and the same for every seed:
 * round(share × n) prompts, at least 1 and at most n − 1, spread evenly over the list (so a file
 * that orders its prompts by theme still holds out some of each).
 */
export function splitPrompts(persona: Pick<PersonaSpec, 'prompts'>, options: SplitOptions = {}): { train: string[]; heldOut: string[] } {
  const share = options.heldOut ?? DEFAULT_HELD_OUT;
  if (!(share > 0 && share < 1)) throw invalidInput(`the held-out share must be between 0 and 1 (got ${share})`, 'heldOut');
  const n = persona.prompts.length;
  if (n < 2) throw invalidInput(`a held-out split needs at least 2 prompts (got ${n})`, 'prompts');
  const count = Math.min(n - 1, Math.max(1, Math.round(share * n)));
  const held = new Set(Array.from({ length: count }, (_, k) => Math.floor(((k + 0.5) * n) / count)));
  return {
    train: persona.prompts.filter((_, i) => !held.has(i)),
    heldOut: persona.prompts.filter((_, i) => held.has(i)),
  };
}

/** The messages a persona's client opens a conversation with: its system prompt, if any, and the prompt. */
export function openingMessages(persona: Pick<PersonaSpec, 'system'>, prompt: string): Array<{ role: 'system' | 'user'; content: string }> {
  return persona.system
    ? [
        { role: 'system', content: persona.system },
        { role: 'user', content: prompt },
      ]
    : [{ role: 'user', content: prompt }];
}
