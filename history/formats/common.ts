/**
 * What both import formats share: a line-level validation error, OpenAI-shaped messages to
 * turnstream's `ChatMessage`, timestamps, and the `Turn` an imported exchange becomes.
 */
import type { AssistantResponse, ChatMessage, Feedback, ToolCall, Turn, TurnType } from '../../schemas/index.ts';
import { importedFeedbackId, importedTurnId } from '../../schemas/index.ts';

/** A line that cannot be imported; `message` is the reason shown with its line number. */
export class ImportLineError extends Error {
  override readonly name = 'ImportLineError';
}

/** What one valid line yields. */
export interface ParsedLine {
  turns: Turn[];
  feedback: Feedback[];
  /** Turns of the line whose next state the file holds (a later turn, or what followed the last). */
  nextStates: number;
}

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function fail(path: string, expected: string, got?: unknown): never {
  const shown = got === undefined ? 'nothing' : JSON.stringify(got)?.slice(0, 60);
  throw new ImportLineError(`${path}: expected ${expected}, got ${shown}`);
}

/** A line of a history file: a JSON object, else the line's error. */
export const jsonLine = (rec: unknown): Json => (isObject(rec) ? rec : fail('(line)', 'a JSON object', rec));

export function optString(obj: Json, keys: string[], path = ''): string | null {
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined || v === null) continue;
    if (typeof v === 'string') return v;
    if (typeof v === 'number') return String(v);
    fail(`${path}${k}`, 'a string', v);
  }
  return null;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function', 'environment']);

/** Content parts (`[{type:'text', text}]`) are flattened to text, as the gateway does. */
function flattenContent(v: unknown, path: string): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const texts: string[] = [];
    v.forEach((part, i) => {
      if (typeof part === 'string') texts.push(part);
      else if (isObject(part) && typeof part.text === 'string') texts.push(part.text);
      else if (!isObject(part)) fail(`${path}[${i}]`, 'a content part object', part);
    });
    return texts.join('');
  }
  return fail(path, 'a string, an array of content parts or null', v);
}

export function toolCalls(v: unknown, path: string): ToolCall[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(path, 'an array of tool calls', v);
  return v.map((c, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(c)) fail(p, 'a tool call object', c);
    const fn = isObject(c.function) ? c.function : c;
    const name = fn.name;
    if (typeof name !== 'string' || name === '') fail(`${p}.function.name`, 'a non-empty string', name);
    const args = fn.arguments ?? fn.input ?? '';
    return {
      id: typeof c.id === 'string' ? c.id : `call_${i}`,
      type: typeof c.type === 'string' ? c.type : 'function',
      name,
      arguments: typeof args === 'string' ? args : JSON.stringify(args),
    };
  });
}

/** One OpenAI-shaped message → `ChatMessage` (validated). */
export function chatMessage(m: unknown, path: string): ChatMessage {
  if (!isObject(m)) fail(path, 'a message object', m);
  const role = m.role;
  if (typeof role !== 'string' || !ROLES.has(role)) fail(`${path}.role`, `one of ${[...ROLES].join('|')}`, role);
  return {
    role,
    content: flattenContent(m.content, `${path}.content`),
    name: typeof m.name === 'string' ? m.name : null,
    toolCallId: typeof m.tool_call_id === 'string' ? m.tool_call_id : typeof m.toolCallId === 'string' ? m.toolCallId : null,
    toolCalls: toolCalls(m.tool_calls ?? m.toolCalls, `${path}.tool_calls`),
  };
}

export function chatMessages(v: unknown, path: string): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) fail(path, 'a non-empty array of messages', v);
  return v.map((m, i) => chatMessage(m, `${path}[${i}]`));
}

/** `parseTimestamp` of `v`, or `orElse()` when the field is absent (undefined or null). */
export function timestampOr<T>(v: unknown, path: string, orElse: () => T): number | T {
  return v === undefined || v === null ? orElse() : parseTimestamp(v, path);
}

/**
 * A timestamp: epoch milliseconds (or seconds, when below 1e11), an ISO-8601 string, or the
 * reference's `YYYY-MM-DD HH:MM:SS` (no zone; read as UTC).
 */
export function parseTimestamp(v: unknown, path: string): number {
  if (typeof v === 'number' && Number.isFinite(v) && v >= 0) return Math.round(v < 1e11 ? v * 1000 : v);
  if (typeof v === 'string' && v.trim() !== '') {
    const s = v.trim();
    if (/^\d+(\.\d+)?$/.test(s)) return parseTimestamp(Number(s), path);
    const naive = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(:\d{2}(\.\d+)?)?)$/.exec(s);
    const ms = Date.parse(naive ? `${naive[1]}T${naive[2]}Z` : s);
    if (Number.isFinite(ms)) return ms;
  }
  return fail(path, 'a timestamp (epoch ms/s, ISO-8601 or "YYYY-MM-DD HH:MM:SS")', v);
}

/** `1|-1` or `👍/👎`-style words → rating; anything else is an error. */
export function parseRating(v: unknown, path: string): number | null {
  if (v === null || v === undefined) return null;
  if (v === 1 || v === -1 || v === 0) return v === 0 ? null : v;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (['1', '+1', 'up', 'good', 'positive', '👍'].includes(s)) return 1;
    if (['-1', 'down', 'bad', 'negative', '👎'].includes(s)) return -1;
  }
  if (typeof v === 'boolean') return v ? 1 : -1;
  return fail(path, 'a rating (1, -1, "up", "down")', v);
}

/**
 * The explicit feedback `m` carries (a line, or a message whose paths start with `prefix`): its
 * `feedback` (`{rating, text}` or a list), else its `rating`; null when it has neither, so that a
 * format can look further.
 */
export function feedbackFields(m: Json, prefix: string): FeedbackInput[] | null {
  if (m.feedback !== undefined && m.feedback !== null) return feedbackInputs(m.feedback, `${prefix}feedback`);
  if (m.rating === undefined || m.rating === null) return null;
  const rating = parseRating(m.rating, `${prefix}rating`);
  return rating === null ? [] : [{ rating, text: null, createdAt: null }];
}

/** Explicit feedback: `{rating?, text?, created_at?}` (or a list of them). */
export interface FeedbackInput {
  rating: number | null;
  text: string | null;
  createdAt: number | null;
}

export function feedbackInputs(v: unknown, path: string): FeedbackInput[] {
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  return list.map((f, i) => {
    const p = Array.isArray(v) ? `${path}[${i}]` : path;
    if (!isObject(f)) fail(p, 'a feedback object {rating?, text?}', f);
    const rating = parseRating(f.rating ?? f.label, `${p}.rating`);
    const text = optString(f, ['text', 'comment'], `${p}.`);
    if (rating === null && !text) fail(p, 'a rating or a text', f);
    const at = f.created_at ?? f.createdAt ?? f.timestamp;
    return { rating, text, createdAt: timestampOr(at, `${p}.created_at`, () => null) };
  });
}

/** What an importer knows of one exchange. */
export interface ImportedExchange {
  sessionId: string;
  /** Position of the turn in its session (for the deterministic id). */
  turnIndex: number;
  userId: string | null;
  turnType: TurnType;
  sessionDone: boolean;
  requestedAt: number;
  completedAt: number;
  model: string | null;
  requestMessages: ChatMessage[];
  toolsJson: string | null;
  response: AssistantResponse;
  usage: Turn['usage'] | null;
  feedback: FeedbackInput[];
  /** What followed the answer when no later turn carries it (see `Turn.nextMessages`). */
  nextMessages?: ChatMessage[];
}

/**
 * The `Turn` (and `Feedback` events) of an imported exchange. No engine token ids exist for
 * history, and docs/design/algorithms.md §1 forbids re-tokenizing for training, so `tokenized=false`: the
 * turn is paired and judged (with `judgeUntrainable`) but never becomes a token-level sample.
 */
export function toEvents(x: ImportedExchange): ParsedLine {
  const turnId = importedTurnId(x.sessionId, x.turnIndex, { request: x.requestMessages, response: x.response, turnType: x.turnType });
  const model = x.model ?? 'imported';
  const turn: Turn = {
    turnId,
    sessionId: x.sessionId,
    sessionSource: 'IMPORTED',
    userId: x.userId,
    turnType: x.turnType,
    sessionDone: x.sessionDone,
    requestedAt: x.requestedAt,
    completedAt: Math.max(x.requestedAt, x.completedAt),
    model,
    policyModelId: model,
    policyVersion: 0,
    requestMessages: x.requestMessages,
    toolsJson: x.toolsJson,
    response: x.response,
    promptTokenIds: [],
    responseTokenIds: [],
    responseLogprobs: [],
    tokenized: false,
    exactLogprobs: false,
    promptTruncatedTokens: 0,
    sampling: { temperature: null, topP: null, maxTokens: null, seed: null, stop: [] },
    usage: x.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    latencyMs: Math.max(0, x.completedAt - x.requestedAt),
    gatewayId: 'import',
    ...(x.nextMessages?.length ? { nextMessages: x.nextMessages } : {}),
  };
  const feedback: Feedback[] = x.feedback.map((f, i) => ({
    feedbackId: importedFeedbackId(turnId, i),
    sessionId: x.sessionId,
    turnId,
    userId: x.userId,
    rating: f.rating,
    text: f.text,
    createdAt: f.createdAt ?? turn.completedAt + 1 + i,
  }));
  return { turns: [turn], feedback, nextStates: 0 };
}

export function usageOf(v: unknown): Turn['usage'] | null {
  if (!isObject(v)) return null;
  const n = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? Math.round(x) : 0);
  const promptTokens = n(v.prompt_tokens ?? v.promptTokens);
  const completionTokens = n(v.completion_tokens ?? v.completionTokens);
  return { promptTokens, completionTokens, totalTokens: n(v.total_tokens ?? v.totalTokens) || promptTokens + completionTokens };
}

export function toolsJsonOf(v: unknown, path: string): string | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) fail(path, 'an array of tools', v);
  return JSON.stringify(v);
}

export function turnTypeOf(v: unknown, path: string): TurnType {
  if (v === undefined || v === null) return 'MAIN';
  if (typeof v === 'string' && /^(main|side)$/i.test(v.trim())) return v.trim().toUpperCase() as TurnType;
  return fail(path, '"main" or "side"', v);
}

export function boolOf(v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  return typeof v === 'string' && ['1', 'true', 'yes', 'on'].includes(v.trim().toLowerCase());
}
