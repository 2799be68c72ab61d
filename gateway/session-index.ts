/**
 * Session inference for clients that send no session id. Chat clients resend the whole
 * history every turn, so turn t+1's messages start with turn t's messages followed by turn
 * t's answer. After each turn the index remembers hash(history + answer) → session; a new
 * call looks up its own prefixes that end with an assistant message, longest first.
 *
 * The hash covers the conversation's stable history, not its exact bytes:
 * - System and developer messages are left out: agents rebuild their system prompt each turn
 *   (time, memory, tool lists), which must not split a session.
 * - Text is compared without whitespace (Unicode NFC), so trimming, re-wrapping and content
 *   sent back as parts instead of a string (parts are joined with newlines) still match.
 * - Tool calls count by name and arguments, tool results by content; tool call ids do not
 *   count, as some clients rewrite them.
 * - Trailing context a client injects and does not keep: an agent may append messages after the
 *   user's message on every request (OpenClaw appends its internal context as a last user
 *   message) and leave them out of the history it sends next. So a turn is also remembered
 *   without the trailing messages after the first one of its final run of non-assistant
 *   messages, at most {@link MAX_DROPPED_TRAILING} of them. This is structural, not tied to any
 *   client's wording.
 * - The user id, when known, is part of every hash.
 *
 * Two conversations that end up with the same history and answer (two users who both said
 * "hi" and got the same reply, with no user id to tell them apart) make their key AMBIGUOUS:
 * the next turn with that history starts a new session rather than joining either, so two
 * people are never merged into one session.
 *
 * Prefix hashes are computed incrementally (`Hash.copy()`), so a call costs one pass over its
 * history whatever its length. The index is an in-memory LRU; a gateway with Kafka also learns
 * every instance's turns from the turns topic (the last 30 minutes on start), so behind a load
 * balancer without affinity, or after a restart, a continued conversation keeps its session
 * once its previous turn has reached Kafka (typically well under a second).
 */
import { createHash, type Hash } from 'node:crypto';
import type { AssistantResponse, ChatMessage, ToolCall } from '../schemas/index.ts';
import { Lru } from './lru.ts';

const SKIPPED_ROLES = new Set(['system', 'developer']);

/** Most trailing messages a turn is also remembered without (injected context). */
export const MAX_DROPPED_TRAILING = 3;

/** Marks a key two sessions share: it names no session. */
const AMBIGUOUS = '\u0000ambiguous';

const squash = (s: string | null | undefined): string => (s ?? '').normalize('NFC').replace(/\s+/gu, '');

function feed(h: Hash, role: string, content: string | null, toolCalls: readonly ToolCall[]): void {
  h.update(JSON.stringify([role, squash(content), toolCalls.map((t) => [t.name, squash(t.arguments)])]));
  h.update('\u0000');
}

function seed(userId: string | null): Hash {
  return createHash('sha256').update(`turnstream-session-v2\u0000${userId ?? ''}\u0000`);
}

const stable = (messages: readonly ChatMessage[]): ChatMessage[] => messages.filter((m) => !SKIPPED_ROLES.has(m.role));

/** Hashes of every prefix of `messages` that ends with an assistant message, longest first. */
export function assistantPrefixHashes(messages: readonly ChatMessage[], userId: string | null): string[] {
  const h = seed(userId);
  const out: string[] = [];
  for (const m of stable(messages)) {
    feed(h, m.role, m.content, m.toolCalls);
    if (m.role === 'assistant') out.push(h.copy().digest('base64url'));
  }
  return out.reverse();
}

/**
 * The keys the next turn of this conversation may look up: hash(history + answer), and the same
 * without 1..{@link MAX_DROPPED_TRAILING} trailing messages of the history's final run of
 * non-assistant messages (its first message always stays).
 */
export function continuationHashes(messages: readonly ChatMessage[], response: AssistantResponse, userId: string | null): string[] {
  const history = stable(messages);
  let runStart = history.length;
  while (runStart > 0 && history[runStart - 1].role !== 'assistant') runStart--;
  const droppable = Math.min(MAX_DROPPED_TRAILING, Math.max(0, history.length - runStart - 1));
  const h = seed(userId);
  const keep = history.length - droppable;
  for (let i = 0; i < keep; i++) feed(h, history[i].role, history[i].content, history[i].toolCalls);
  // Keys for "keep the first k messages", k = keep..len, each a copy of the running hash.
  const keys: string[] = [];
  for (let i = keep; ; i++) {
    const k = h.copy();
    feed(k, 'assistant', response.content, response.toolCalls);
    keys.push(k.digest('base64url'));
    if (i === history.length) break;
    feed(h, history[i].role, history[i].content, history[i].toolCalls);
  }
  return keys.reverse();
}

export class SessionIndex {
  private readonly lru: Lru<string, string>;

  /** @param capacity most remembered keys (one per turn, a few for turns with trailing context). @default 10000 */
  constructor(capacity = 10_000) {
    this.lru = new Lru(capacity);
  }

  get size(): number {
    return this.lru.size;
  }

  /** The session whose latest answer this history continues, or null (none, or ambiguous). */
  infer(messages: readonly ChatMessage[], userId: string | null): string | null {
    for (const key of assistantPrefixHashes(messages, userId)) {
      const s = this.lru.get(key);
      if (s === AMBIGUOUS) return null;
      if (s) return s;
    }
    return null;
  }

  /** Remembers a completed turn so the next turn of the conversation finds its session. */
  remember(sessionId: string, messages: readonly ChatMessage[], response: AssistantResponse, userId: string | null): void {
    for (const key of continuationHashes(messages, response, userId)) {
      const known = this.lru.get(key);
      this.lru.set(key, known === undefined || known === sessionId ? sessionId : AMBIGUOUS);
    }
  }
}
