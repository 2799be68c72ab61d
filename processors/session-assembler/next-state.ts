/**
 * What turn t+1's request says happened after turn t: the next state, and whether the request's
 * history really contains turn t's response.
 */
import type { AssistantResponse, ChatMessage, FeedbackEvidence, NextStateItem, NextStateRole, ToolCall } from '../../schemas/index.ts';

export interface ExtractedNextState {
  items: NextStateItem[];
  /** The request's history contains turn t's response (content and tool calls). */
  historyVerified: boolean;
}

const CONTEXT_ROLES = new Set(['system', 'developer']);

const norm = (s: string | null | undefined): string => (s ?? '').replace(/\s+/g, ' ').trim();

// Some clients rewrite tool call ids; the same name and arguments are the same call.
const sameCall = (a: ToolCall, b: ToolCall): boolean =>
  (!!a.id && a.id === b.id) || (a.name === b.name && norm(a.arguments) === norm(b.arguments));

/** Does an assistant message of a later request reproduce this response? Whitespace is not significant. */
export function matchesResponse(message: ChatMessage, response: AssistantResponse): boolean {
  if (message.role !== 'assistant') return false;
  if (norm(message.content) !== norm(response.content)) return false;
  if (message.toolCalls.length !== response.toolCalls.length) return false;
  return response.toolCalls.every((call) => message.toolCalls.some((m) => sameCall(m, call)));
}

export function roleOf(message: ChatMessage): NextStateRole {
  if (message.role === 'user') return 'USER';
  if (message.role === 'tool' || message.role === 'function') return 'TOOL';
  return 'ENVIRONMENT';
}

const toItem = (m: ChatMessage): NextStateItem => ({
  role: roleOf(m),
  content: m.content ?? '',
  toolCallId: roleOf(m) === 'TOOL' ? m.toolCallId : null,
});

/** Messages that followed a turn as its next state (system and developer messages are context, not events). */
export const nextStateItems = (messages: readonly ChatMessage[]): NextStateItem[] =>
  messages.filter((m) => m.role !== 'assistant' && !CONTEXT_ROLES.has(m.role)).map(toItem);

/** The run of non-assistant messages starting at `from`. */
function runFrom(messages: readonly ChatMessage[], from: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = from; i < messages.length && messages[i].role !== 'assistant'; i++) out.push(messages[i]);
  return out;
}

const sameMessage = (a: ChatMessage, b: ChatMessage): boolean => a.role === b.role && norm(a.content) === norm(b.content);

/** The final run of non-assistant messages, system and developer messages left out. */
function trailingRun(messages: readonly ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role !== 'assistant'; i--)
    if (!CONTEXT_ROLES.has(messages[i].role)) out.unshift(messages[i]);
  return out;
}

/**
 * How many trailing messages of turn t's request the client left out of the history it sent
 * next: context it injects into every request and does not keep (OpenClaw's internal-context
 * message). `keptBefore` is the next request's history up to turn t's response. 0 unless what
 * was kept is a proper, non-empty beginning of turn t's final run of non-assistant messages.
 */
export function droppedTrailing(previousRequest: readonly ChatMessage[], keptBefore: readonly ChatMessage[]): number {
  const sent = trailingRun(previousRequest);
  const kept = trailingRun(keptBefore);
  if (kept.length === 0 || kept.length >= sent.length) return 0;
  return kept.every((m, i) => sameMessage(m, sent[i])) ? sent.length - kept.length : 0;
}

/**
 * The next state of a turn whose response is `response`, read from the next main turn's request.
 *
 * The response is looked for among the request's assistant messages, newest first (clients
 * may trim or compact older history, so no fixed index is required). When found, the next state
 * is the run of non-assistant messages right after it: the user's reply, ALL tool results (with
 * their tool call ids), environment messages. That also holds when a turn in between was lost or
 * is late: the earlier turn still gets its own next state. When not found (a regeneration, an
 * edited history), `historyVerified` is false and the next state is the trailing run of
 * non-assistant messages, as the reference takes the last message.
 *
 * With turn t's own request (`previousRequest`), context the client injects at the end of every
 * request and does not keep is left out: when the next request kept only the first k of turn t's
 * n trailing messages, its own last n − k messages are the same kind of injection and are not
 * part of the next state (its first message always is).
 */
export function extractNextState(
  response: AssistantResponse,
  nextRequest: readonly ChatMessage[],
  previousRequest?: readonly ChatMessage[],
): ExtractedNextState {
  for (let i = nextRequest.length - 1; i >= 0; i--) {
    if (matchesResponse(nextRequest[i], response)) {
      let run = runFrom(nextRequest, i + 1);
      if (previousRequest && i + 1 + run.length === nextRequest.length) {
        const injected = droppedTrailing(previousRequest, nextRequest.slice(0, i));
        run = run.slice(0, Math.max(1, run.length - injected));
      }
      return { items: run.map(toItem), historyVerified: true };
    }
  }
  let start = nextRequest.length;
  while (start > 0 && nextRequest[start - 1].role !== 'assistant') start--;
  // A system prompt at the very start is context, not something that happened after turn t.
  const trailing = runFrom(nextRequest, start).filter((m, k) => !(start === 0 && k === 0 && m.role === 'system'));
  return { items: trailing.map(toItem), historyVerified: false };
}

/** A feedback event as a next-state item: 👍/👎 and the text, readable by a judge. */
export function feedbackItem(f: FeedbackEvidence): NextStateItem {
  const rating = f.rating === null ? null : f.rating > 0 ? '👍 (thumbs up)' : f.rating < 0 ? '👎 (thumbs down)' : null;
  const content = [rating, f.text?.trim() || null].filter((x): x is string => x !== null).join(' — ');
  return { role: 'FEEDBACK', content, toolCallId: null };
}
