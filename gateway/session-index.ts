/**
 * Session inference for clients that send no session id. Chat clients resend the whole
 * history every turn, so turn t+1's messages start with turn t's messages followed by turn
 * t's answer. After each turn the index remembers hash(history + answer) → session; a new
 * call looks up its own prefixes that end with an assistant message, longest first.
 *
 * The hash covers roles, text (trimmed), tool calls (name + arguments) and tool call ids,
 * and the user id when known. System/developer messages are left out: clients such as
 * OpenClaw rebuild their system prompt each turn (time, memory), which must not split a
 * session. Prefix hashes are computed incrementally (`Hash.copy()`), so a call costs one
 * pass over its history whatever its length. The index is an in-memory LRU; a gateway with
 * Kafka also learns every instance's turns from the turns topic (the last 30 minutes on start),
 * so behind a load balancer without affinity, or after a restart, a continued conversation
 * keeps its session once its previous turn has reached Kafka (typically well under a second).
 */
import { createHash, type Hash } from 'node:crypto';
import type { AssistantResponse, ChatMessage } from '../schemas/index.ts';
import { Lru } from './lru.ts';

const SKIPPED_ROLES = new Set(['system', 'developer']);

function feed(
  h: Hash,
  role: string,
  content: string | null,
  toolCalls: ReadonlyArray<{ name: string; arguments: string }>,
  toolCallId: string | null,
): void {
  h.update(JSON.stringify([role, (content ?? '').trim(), toolCalls.map((t) => [t.name, t.arguments]), toolCallId ?? '']));
  h.update('\u0000');
}

function seed(userId: string | null): Hash {
  return createHash('sha256').update(`turnstream-session-v1\u0000${userId ?? ''}\u0000`);
}

/** Hashes of every prefix of `messages` that ends with an assistant message, longest first. */
export function assistantPrefixHashes(messages: readonly ChatMessage[], userId: string | null): string[] {
  const h = seed(userId);
  const out: string[] = [];
  for (const m of messages) {
    if (SKIPPED_ROLES.has(m.role)) continue;
    feed(h, m.role, m.content, m.toolCalls, m.toolCallId);
    if (m.role === 'assistant') out.push(h.copy().digest('base64url'));
  }
  return out.reverse();
}

/** Hash of a turn's history followed by its answer: the key the next turn will look up. */
export function continuationHash(messages: readonly ChatMessage[], response: AssistantResponse, userId: string | null): string {
  const h = seed(userId);
  for (const m of messages) if (!SKIPPED_ROLES.has(m.role)) feed(h, m.role, m.content, m.toolCalls, m.toolCallId);
  feed(h, 'assistant', response.content, response.toolCalls, null);
  return h.digest('base64url');
}

export class SessionIndex {
  private readonly lru: Lru<string, string>;

  /** @param capacity most remembered turns. @default 10000 */
  constructor(capacity = 10_000) {
    this.lru = new Lru(capacity);
  }

  get size(): number {
    return this.lru.size;
  }

  /** The session whose latest answer this history continues, or null. */
  infer(messages: readonly ChatMessage[], userId: string | null): string | null {
    for (const key of assistantPrefixHashes(messages, userId)) {
      const s = this.lru.get(key);
      if (s) return s;
    }
    return null;
  }

  /** Remembers a completed turn so the next turn of the conversation finds its session. */
  remember(sessionId: string, messages: readonly ChatMessage[], response: AssistantResponse, userId: string | null): void {
    this.lru.set(continuationHash(messages, response, userId), sessionId);
  }
}
