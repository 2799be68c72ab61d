/**
 * turnstream's one deterministic id: the same parts always give the same id, so that an event
 * sent twice (a client's retry with its idempotency key, a re-import of the same history, a
 * re-sent verifier outcome) dedupes downstream. UUID version 5 layout (SHA-1 over a namespace and
 * a name), with turnstream's own namespace.
 */
import { createHash } from 'node:crypto';

/** turnstream's import namespace (a fixed random UUID). */
const NAMESPACE = Buffer.from('6f1c0d5e8a3b4c2d9e7f10a2b3c4d5e6', 'hex');

/** A UUIDv5-style id of `parts` (joined unambiguously). */
export function deterministicId(...parts: Array<string | number>): string {
  const h = createHash('sha1').update(NAMESPACE);
  for (const p of parts) {
    const s = String(p);
    h.update(`${Buffer.byteLength(s)}:`).update(s);
  }
  const b = h.digest().subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50; // version 5
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
  const x = b.toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * The id of an imported turn: session id + the turn's index in its session + its content (request
 * messages and response). Two different turns at the same index (an edited file) get different ids.
 */
export function importedTurnId(sessionId: string, turnIndex: number, content: unknown): string {
  return deterministicId('turn', sessionId, turnIndex, JSON.stringify(content));
}

/** The id of the `index`-th feedback event carried by an imported turn. */
export function importedFeedbackId(turnId: string, index: number): string {
  return deterministicId('feedback', turnId, index);
}
