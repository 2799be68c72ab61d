/**
 * A persona's hidden preference as a declarative, composable check, compiled to a predicate on the
 * model's reply. The check is never shown to the model or the judge.
 *
 * Every operator sees the reply with leading and trailing whitespace removed, and an empty (or
 * all-whitespace) reply satisfies no check at all, `not` and `regex_absent` included.
 *
 * | operator                              | satisfied when the reply…                                      |
 * | ------------------------------------- | -------------------------------------------------------------- |
 * | `{"regex_present": R}`                | matches R somewhere                                            |
 * | `{"regex_absent": R}`                 | never matches R                                                |
 * | `{"regex_count_at_least": [R, n]}`    | has at least n non-overlapping matches of R                    |
 * | `{"max_words": n}` / `{"min_words": n}` | has at most / at least n words (whitespace-separated tokens) |
 * | `{"max_chars": n}`                    | has at most n characters (Unicode code points)                 |
 * | `{"starts_with": s}` / `{"ends_with": s}` | starts / ends with s exactly (case matters; use a regex with the `i` flag otherwise) |
 * | `{"all": [c, …]}` / `{"any": [c, …]}` | satisfies every / at least one of the checks                   |
 * | `{"not": c}`                          | does not satisfy c                                             |
 *
 * A regex R is a JavaScript regex source (`"\\bvery\\b"`), or an object with flags:
 * `{"regex": "\\bvery\\b", "flags": "i"}`. No `/…/flags` shorthand: a source that begins and ends
 * with a slash is an ordinary source. The `g` and `y` flags are not accepted (counting adds `g`
 * itself); `\p{…}` classes need the `u` flag.
 */
import { invalidInput, type TurnstreamError } from '../core/index.ts';

/** A JavaScript regex source, or a source with flags. */
export type RegexSpec = string | { regex: string; flags?: string };

export type PersonaCheck =
  | { regex_present: RegexSpec }
  | { regex_absent: RegexSpec }
  | { regex_count_at_least: [RegexSpec, number] }
  | { max_words: number }
  | { min_words: number }
  | { max_chars: number }
  | { starts_with: string }
  | { ends_with: string }
  | { all: PersonaCheck[] }
  | { any: PersonaCheck[] }
  | { not: PersonaCheck };

/** Whether a reply satisfies the check. */
export type CheckFn = (reply: string) => boolean;

export const CHECK_OPERATORS = [
  'regex_present',
  'regex_absent',
  'regex_count_at_least',
  'max_words',
  'min_words',
  'max_chars',
  'starts_with',
  'ends_with',
  'all',
  'any',
  'not',
] as const;

export type CheckOperator = (typeof CHECK_OPERATORS)[number];

/** Whitespace-separated tokens of a (trimmed) reply. */
export const wordCount = (text: string): number => (text === '' ? 0 : text.split(/\s+/u).length);

/** A predicate on an already trimmed, non-empty reply. */
type Inner = (text: string) => boolean;

const fail = (path: string, what: string): TurnstreamError => invalidInput(`${path} ${what}`, path);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function positiveInteger(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw fail(path, 'must be a positive integer');
  return v;
}

function regexOf(spec: unknown, path: string, extraFlags = ''): RegExp {
  let source: unknown = spec;
  let flags = '';
  if (isObject(spec)) {
    const unknown = Object.keys(spec).filter((k) => k !== 'regex' && k !== 'flags');
    if (unknown.length) throw fail(path, `has an unknown field "${unknown[0]}" (a regex object has "regex" and "flags")`);
    source = spec.regex;
    if (spec.flags !== undefined) {
      if (typeof spec.flags !== 'string' || !/^[dimsuv]*$/.test(spec.flags))
        throw fail(`${path}.flags`, 'must be a string of the regex flags d, i, m, s, u, v');
      flags = spec.flags;
    }
    path = `${path}.regex`;
  }
  if (typeof source !== 'string' || source === '') throw fail(path, 'must be a non-empty regex source (or {"regex", "flags"})');
  try {
    return new RegExp(source, flags + extraFlags);
  } catch (err) {
    throw invalidInput(`${path} is not a valid regex: ${(err as Error).message}`, path, err);
  }
}

function affix(v: unknown, path: string, end: boolean): string {
  if (typeof v !== 'string' || v === '') throw fail(path, 'must be a non-empty string');
  // The reply is trimmed, so whitespace on the outer side could never match.
  if (end ? /\s$/u.test(v) : /^\s/u.test(v)) throw fail(path, `must not ${end ? 'end' : 'start'} with whitespace (replies are trimmed)`);
  return v;
}

function list(v: unknown, path: string): Inner[] {
  if (!Array.isArray(v) || v.length === 0) throw fail(path, 'must be a non-empty array of checks');
  return v.map((c, i) => compileInner(c, `${path}[${i}]`));
}

function compileInner(check: unknown, path: string): Inner {
  if (!isObject(check)) throw fail(path, `must be an object with one operator (${CHECK_OPERATORS.join(', ')})`);
  const keys = Object.keys(check);
  if (keys.length !== 1)
    throw fail(
      path,
      keys.length === 0
        ? `is empty; it needs one operator (${CHECK_OPERATORS.join(', ')})`
        : `has ${keys.length} operators (${keys.join(', ')}); combine checks with "all": [...]`,
    );
  const op = keys[0];
  const arg = check[op];
  const at = `${path}.${op}`;
  switch (op as CheckOperator) {
    case 'regex_present': {
      const re = regexOf(arg, at);
      return (t) => re.test(t);
    }
    case 'regex_absent': {
      const re = regexOf(arg, at);
      return (t) => !re.test(t);
    }
    case 'regex_count_at_least': {
      if (!Array.isArray(arg) || arg.length !== 2) throw fail(at, 'must be [regex, n]');
      const re = regexOf(arg[0], `${at}[0]`, 'g');
      const n = positiveInteger(arg[1], `${at}[1]`);
      return (t) => {
        let count = 0;
        // matchAll steps past empty matches itself.
        for (const _ of t.matchAll(re)) if (++count >= n) return true;
        return false;
      };
    }
    case 'max_words': {
      const n = positiveInteger(arg, at);
      return (t) => wordCount(t) <= n;
    }
    case 'min_words': {
      const n = positiveInteger(arg, at);
      return (t) => wordCount(t) >= n;
    }
    case 'max_chars': {
      const n = positiveInteger(arg, at);
      return (t) => [...t].length <= n;
    }
    case 'starts_with': {
      const s = affix(arg, at, false);
      return (t) => t.startsWith(s);
    }
    case 'ends_with': {
      const s = affix(arg, at, true);
      return (t) => t.endsWith(s);
    }
    case 'all': {
      const cs = list(arg, at);
      return (t) => cs.every((c) => c(t));
    }
    case 'any': {
      const cs = list(arg, at);
      return (t) => cs.some((c) => c(t));
    }
    case 'not': {
      const c = compileInner(arg, at);
      return (t) => !c(t);
    }
    default:
      throw fail(path, `has an unknown operator "${op}" (known: ${CHECK_OPERATORS.join(', ')})`);
  }
}

/**
 * Validates a check and compiles it. Throws one `TurnstreamError(INVALID_INPUT)` whose message
 * starts with the path of the offending field (`check.all[1].max_words must be a positive integer`).
 */
export function compileCheck(check: unknown, path = 'check'): CheckFn {
  const inner = compileInner(check, path);
  return (reply) => {
    const text = reply.trim();
    return text !== '' && inner(text);
  };
}
