/**
 * Who is calling. API keys (`TURNSTREAM_API_KEYS`: `key` or `key:userId`, comma separated; none
 * = auth off) are user keys: the caller IS the key's user, and naming another user (`X-User-Id`,
 * the body's `user`) is refused with 403. Service keys (`TURNSTREAM_SERVICE_KEYS`: `key` or
 * `key:name`) may act for any user (a chat front end, an importer); the Turn or Feedback then
 * records the service's name in `actedBy`. With auth off, the named user is taken at its word.
 */
import { ErrorCodes, TurnstreamError, KeySet, presentedKey } from '../core/index.ts';
import type { HeaderBag } from './request-values.ts';

/** The authenticated caller of a request. */
export interface Caller {
  /** Keys are configured: identity and ownership are enforced. */
  enforced: boolean;
  /** The key's user (a user key), the service's name (a service key), or null. */
  userId: string | null;
  /** A service key: may act for other users. */
  service: boolean;
}

/** Splits `key:value` entries at the first `:` (a missing or empty value is null). */
export function parseKeyEntries(entries: readonly string[]): Array<[string, string | null]> {
  return entries
    .map((e) => e.trim())
    .filter(Boolean)
    .map((e) => {
      const i = e.indexOf(':');
      const key = i >= 0 ? e.slice(0, i) : e;
      const value = i >= 0 ? e.slice(i + 1).trim() : '';
      return [key, value || null];
    });
}

type KeyHolder = Pick<Caller, 'userId' | 'service'>;

export class Authenticator {
  private readonly keys: KeySet<KeyHolder>;

  /** @param entries user keys (`key` / `key:userId`); @param serviceKeys keys that may act for others (`key` / `key:name`) */
  constructor(entries: readonly string[], serviceKeys: readonly string[] = []) {
    const users = parseKeyEntries(entries).map(([k, userId]): [string, KeyHolder] => [k, { userId, service: false }]);
    const services = parseKeyEntries(serviceKeys).map(([k, name]): [string, KeyHolder] => [
      k,
      { userId: name ?? 'service', service: true },
    ]);
    this.keys = new KeySet([...users, ...services]);
  }

  get enabled(): boolean {
    return this.keys.size > 0;
  }

  /**
   * Checks `Authorization: Bearer <key>` (or `x-api-key` / `api-key`). Returns the caller;
   * throws 401-mapped UNAUTHORIZED for a missing or unknown key (when auth is on).
   */
  authenticate(headers: HeaderBag): Caller {
    if (!this.enabled) return { enforced: false, userId: null, service: false };
    const token = presentedKey(headers);
    if (!token) throw new TurnstreamError(ErrorCodes.UNAUTHORIZED, 'missing API key: send Authorization: Bearer <key>');
    const match = this.keys.match(token);
    if (!match) throw new TurnstreamError(ErrorCodes.UNAUTHORIZED, 'invalid API key');
    return { enforced: true, ...match };
  }
}

/** The caller of a request when no key is configured. */
export const OPEN_CALLER: Caller = { enforced: false, userId: null, service: false };

/**
 * The user a call is recorded under, given the user it names (`X-User-Id` or `user`; `param`
 * says which). A user key may only name its own user; a service key may name anyone, and is
 * then recorded in `actedBy`.
 * @throws TurnstreamError FORBIDDEN (403) when a user key names another user
 */
export function actAs(caller: Caller, named: string | null, param: string): { userId: string | null; actedBy: string | null } {
  if (!caller.enforced) return { userId: named, actedBy: null };
  if (caller.service)
    return named && named !== caller.userId ? { userId: named, actedBy: caller.userId } : { userId: caller.userId, actedBy: null };
  if (named !== null && named !== caller.userId) {
    throw new TurnstreamError(
      ErrorCodes.FORBIDDEN,
      `this API key belongs to ${caller.userId === null ? 'no user' : `user ${JSON.stringify(caller.userId)}`}; it cannot act for ${JSON.stringify(named)} (only a service key can: TURNSTREAM_SERVICE_KEYS)`,
      { param },
    );
  }
  return { userId: caller.userId, actedBy: null };
}
