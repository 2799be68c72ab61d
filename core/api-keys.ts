/**
 * Shared secrets presented over HTTP: the gateway's API keys, the metrics key, the dashboard
 * key. A presented key is compared by its sha256 with `crypto.timingSafeEqual` against every
 * configured key without an early exit, so the timing says nothing about the keys.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

type HeaderBag = Record<string, string | string[] | undefined>;

const sha = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

const first = (headers: HeaderBag, name: string): string | undefined => {
  const v = headers[name];
  const s = (Array.isArray(v) ? v[0] : v)?.trim();
  return s ? s : undefined;
};

/**
 * The key a request presents: `Authorization: Bearer <key>`, `Authorization: Basic` (the
 * password; what a browser sends after its login prompt), or `x-api-key` / `api-key`.
 */
export function presentedKey(headers: HeaderBag): string | undefined {
  const auth = first(headers, 'authorization');
  if (auth) {
    const bearer = /^Bearer\s+(.+)$/i.exec(auth);
    if (bearer) return bearer[1].trim() || undefined;
    const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(auth);
    if (basic) {
      const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
      const i = decoded.indexOf(':');
      return (i >= 0 ? decoded.slice(i + 1) : decoded) || undefined;
    }
    return undefined;
  }
  return first(headers, 'x-api-key') ?? first(headers, 'api-key');
}

/** A set of keys, each with what it stands for (a user, a service name). */
export class KeySet<T> {
  private readonly entries: Array<{ hash: Buffer; value: T }>;

  constructor(entries: ReadonlyArray<readonly [key: string, value: T]>) {
    this.entries = entries.filter(([k]) => k.length > 0).map(([k, value]) => ({ hash: sha(k), value }));
  }

  get size(): number {
    return this.entries.length;
  }

  /** What `key` stands for, or undefined when it is not one of the set. */
  match(key: string | undefined): T | undefined {
    if (key === undefined) return undefined;
    const h = sha(key);
    let found: { value: T } | undefined;
    for (const e of this.entries) if (timingSafeEqual(h, e.hash) && !found) found = e;
    return found?.value;
  }
}
