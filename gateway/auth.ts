/**
 * API keys (`TURNSTREAM_API_KEYS`: `key` or `key:userId`, comma separated; none = auth off).
 * Presented keys are compared by their sha256 with `crypto.timingSafeEqual`, against every
 * configured key without an early exit, so the timing says nothing about the keys.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorCodes, TurnstreamError } from '../streams/errors.ts';
import { header, type HeaderBag } from './turn-context.ts';

export interface ApiKey {
  hash: Buffer;
  userId: string | null;
}

const sha = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Parses `key` / `key:userId` entries (split at the first `:`). */
export function parseApiKeys(entries: readonly string[]): ApiKey[] {
  return entries
    .map((e) => e.trim())
    .filter(Boolean)
    .map((e) => {
      const i = e.indexOf(':');
      const key = i >= 0 ? e.slice(0, i) : e;
      const user = i >= 0 ? e.slice(i + 1).trim() : '';
      return { hash: sha(key), userId: user || null };
    });
}

export class Authenticator {
  private readonly keys: ApiKey[];

  constructor(entries: readonly string[]) {
    this.keys = parseApiKeys(entries);
  }

  get enabled(): boolean {
    return this.keys.length > 0;
  }

  /**
   * Checks `Authorization: Bearer <key>` (or `api-key` / `x-api-key`). Returns the key's user
   * id (null when the key has none, or when auth is off); throws 401-mapped UNAUTHORIZED.
   */
  authenticate(headers: HeaderBag): { userId: string | null } {
    if (!this.enabled) return { userId: null };
    const auth = header(headers, 'authorization');
    let token: string | undefined;
    if (auth) {
      const m = /^Bearer\s+(.+)$/i.exec(auth);
      token = m ? m[1].trim() : undefined;
    } else {
      token = header(headers, 'x-api-key') ?? header(headers, 'api-key');
    }
    if (!token) throw new TurnstreamError(ErrorCodes.UNAUTHORIZED, 'missing API key: send Authorization: Bearer <key>');
    const h = sha(token);
    let match: ApiKey | null = null;
    for (const k of this.keys) if (timingSafeEqual(h, k.hash) && !match) match = k;
    if (!match) throw new TurnstreamError(ErrorCodes.UNAUTHORIZED, 'invalid API key');
    return { userId: match.userId };
  }
}
