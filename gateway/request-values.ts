/**
 * A request's raw values, read the same way by every route: its headers (a bag as Node gives it)
 * and the flags a header or a body field may carry. Kept apart from the turn context, which the
 * request parser and the authenticator both use, so that neither imports the other.
 */
import { invalidInput } from '../core/index.ts';

export type HeaderBag = Record<string, string | string[] | undefined>;

const TRUTHY = new Set(['1', 'true', 'yes', 'on']);
const FALSY = new Set(['0', 'false', 'no', 'off', '']);

/** 1/true/yes/on (any case) → true; 0/false/no/off/empty/absent → false; booleans and numbers as such. */
export function parseTruthy(v: unknown, param = 'session_done'): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (TRUTHY.has(s)) return true;
    if (FALSY.has(s)) return false;
  }
  throw invalidInput(`${param} must be one of 1/true/yes/on or 0/false/no/off`, param);
}

export function header(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}
