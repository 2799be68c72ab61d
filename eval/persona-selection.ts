/**
 * Which personas a `turnstream eval` run talks as: the file of `--personas` (by default the real
 * model's, or the built-in model's five for it), narrowed to `--only`, to `--quick`'s two or to
 * the real model's standard three; with `--users`, the one preference the users share.
 */
import { resolve } from 'node:path';
import { invalidInput } from '../core/index.ts';
import type { EvalFlags } from './eval-flags.ts';
import { BUILTIN_PERSONAS_FILE, DEFAULT_PERSONAS_FILE, loadPersonas, type Persona } from './persona.ts';

/** The shipped personas that learned fastest on SmolLM2 over 24 interactions (docs/learning.md). */
const QUICK_PERSONAS = ['twosentence-tia', 'concise-carl'];

/**
 * The real model's standard eval with the shipped file: its length and layout personas, 3 seeds ×
 * 24 interactions within an hour on 2 cores. The others (a sign-off, a tone, lists) take `--only`
 * or `--personas`; what they reach is in docs/learning.md.
 */
const STANDARD_PERSONAS = ['concise-carl', 'twosentence-tia', 'oneparagraph-pia'];

/** The named personas when the file has them all, else `fallback` (all of them by default). */
function pick(personas: Persona[], names: string[], fallback: Persona[] = personas): Persona[] {
  const found = personas.filter((p) => names.includes(p.name));
  return found.length === names.length ? found : fallback;
}

/** `--quick`'s two personas: the fast learners when the file has them, else its first two. */
const quickPersonas = (personas: Persona[]): Persona[] => pick(personas, QUICK_PERSONAS, personas.slice(0, 2));

/**
 * The personas of `--personas` (by default the real model's, or the built-in model's five for it),
 * narrowed to `--only`; an unknown name there is an input error that lists the known ones.
 */
async function selectPersonas(f: EvalFlags, defaultFile: string): Promise<Persona[]> {
  const personas = await loadPersonas(resolve(f.personas ?? defaultFile));
  if (!f.only) return personas;
  const wanted = f.only
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const names = personas.map((p) => p.name);
  const unknown = wanted.filter((w) => !names.includes(w));
  if (unknown.length > 0 || wanted.length === 0)
    throw invalidInput(
      `--only: ${unknown.length ? `unknown persona${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}` : 'no persona named'}; known: ${names.join(', ')}`,
      '--only',
    );
  return personas.filter((p) => wanted.includes(p.name));
}

/** The personas of one command: the ones talked as, and with `--users --only NAME` the one the users share. */
export interface RunPersonas {
  /** Empty with `--users`. */
  personas: Persona[];
  /** With `--users` and `--only`: the preference the users share (one persona); else null. */
  shared: Persona | null;
}

/**
 * The personas of a run, checked before any model loads (a bad file or name is one line).
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a bad file, an unknown `--only` name, or
 * `--users` with more than one persona in `--only`
 */
export async function runPersonas(f: EvalFlags, builtin: boolean): Promise<RunPersonas> {
  const file = builtin ? BUILTIN_PERSONAS_FILE : DEFAULT_PERSONAS_FILE;
  let personas = f.users ? [] : await selectPersonas(f, file);
  if (f.quick && !f.only) personas = quickPersonas(personas);
  else if (!builtin && !f.only && !f.personas && !f.users) personas = pick(personas, STANDARD_PERSONAS);
  // With --users: the preference the users share, --only NAME of --personas, else the default of the model kind.
  const shared = f.users && f.only ? await selectPersonas(f, file) : null;
  if (shared && shared.length !== 1) throw invalidInput('--users takes one persona in --only (the preference the users share)', '--only');
  return { personas, shared: shared?.[0] ?? null };
}

/** `--users` without `--only`: curious-quinn on the built-in model (runMultiUserEval's own default), concise-carl on a GGUF model. */
export async function defaultSharedPersona(builtin: boolean): Promise<Persona | undefined> {
  return builtin ? undefined : (await loadPersonas(DEFAULT_PERSONAS_FILE)).find((p) => p.name === 'concise-carl');
}
