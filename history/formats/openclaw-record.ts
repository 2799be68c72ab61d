/**
 * `openclaw-record`: the per-turn record file of the reference system (OpenClaw-RL's API server
 * writes one JSON line per MAIN turn when `OPENCLAW_RECORD_ENABLED=1`, to `OPENCLAW_RECORD_FILE`):
 *
 *   {"session_id": "abc", "turn": 3, "timestamp": "2026-02-14 20:00:00",
 *    "messages": [...request messages, OpenAI shape...],
 *    "prompt_text": "...rendered prompt...", "response_text": "...rendered reply...",
 *    "tool_calls": [...] | null,
 *    "next_state": {"role": "user", "content": "..."} | null}
 *
 * Accepted variants: `response` as an OpenAI assistant message (`{content, tool_calls,
 * finish_reason}`) or a string, instead of `response_text`; `turn_type` (`main`|`side`, default
 * `main`: the reference records main turns only); `session_done`; `user_id`/`user`; `model`;
 * `tools`; `usage`; explicit feedback as `feedback` (`{rating, text}` or a list), `rating`, or
 * `label: -1` (the reference feedback store's 👎; its `label: 1` is an implicit positive, not
 * feedback, and is ignored). `turn` may be missing (the record's position in its session is used).
 *
 * `response_text` is the chat-template rendering: end-of-turn tokens, `<think>…</think>` and
 * `<tool_call>…</tool_call>` blocks (when `tool_calls` carries them) are stripped from it.
 * `next_state` travels with the turn as `nextMessages`: while the session goes on, turnstream takes
 * the next state from the NEXT turn's request, as live (the reference's next_state IS that
 * request's last message); for the session's last record it is the only place the user's last
 * word is kept, and becomes the turn's next state when the session ends. An explicit
 * `"next_state": null` is how the reference closed a session (`session_done`), so it marks the turn
 * `sessionDone`.
 * `prompt_text` is ignored (no re-tokenizing, docs/design/algorithms.md §1).
 */
import {
  boolOf,
  chatMessage,
  chatMessages,
  fail,
  feedbackFields,
  isObject,
  jsonLine,
  optString,
  timestampOr,
  toEvents,
  toolCalls,
  toolsJsonOf,
  turnTypeOf,
  usageOf,
  type FeedbackInput,
  type Json,
  type ParsedLine,
} from './common.ts';

const END_TOKENS = /(<\|im_end\|>|<\|eot_id\|>|<\|endoftext\|>|<\|end\|>|<\/s>)\s*$/;

/** The assistant's text out of a chat-template rendering. */
export function cleanRenderedResponse(text: string, hasToolCalls: boolean): string {
  let s = text;
  for (let i = 0; i < 3 && END_TOKENS.test(s); i++) s = s.replace(END_TOKENS, '');
  s = s.replace(/^\s*<think>[\s\S]*?<\/think>/, '');
  if (hasToolCalls) s = s.replace(/<tool_call>[\s\S]*?<\/tool_call>/g, '');
  return s.trim();
}

function feedbackOf(rec: Json): FeedbackInput[] {
  const explicit = feedbackFields(rec, '');
  if (explicit) return explicit;
  if (rec.label === -1 || rec.label === '-1') return [{ rating: -1, text: null, createdAt: null }];
  return [];
}

/** A parser with the per-file state the format needs (turn positions per session). */
export function openclawRecordParser(now: () => number = Date.now): (rec: unknown) => ParsedLine {
  const positions = new Map<string, number>();
  return (line) => {
    const rec = jsonLine(line);
    const sessionId = optString(rec, ['session_id', 'sessionId']);
    if (!sessionId) fail('session_id', 'a non-empty string', rec.session_id);
    const position = (positions.get(sessionId) ?? 0) + 1;
    positions.set(sessionId, position);
    let turnIndex = position;
    if (rec.turn !== undefined && rec.turn !== null) {
      if (typeof rec.turn !== 'number' || !Number.isInteger(rec.turn) || rec.turn < 0) fail('turn', 'a non-negative integer', rec.turn);
      turnIndex = rec.turn;
    }
    const requestMessages = chatMessages(rec.messages, 'messages');

    let content: string | null;
    let calls = toolCalls(rec.tool_calls, 'tool_calls');
    let finishReason: string | null = null;
    if (isObject(rec.response)) {
      const r = rec.response;
      content =
        typeof r.content === 'string'
          ? r.content
          : r.content === null || r.content === undefined
            ? null
            : fail('response.content', 'a string or null', r.content);
      const rc = toolCalls(r.tool_calls, 'response.tool_calls');
      if (rc.length > 0) calls = rc;
      finishReason = typeof r.finish_reason === 'string' ? r.finish_reason : null;
    } else if (typeof rec.response === 'string') {
      content = rec.response;
    } else if (typeof rec.response_text === 'string') {
      content = cleanRenderedResponse(rec.response_text, calls.length > 0);
    } else {
      return fail('response_text', 'a string (or `response`)', rec.response_text ?? rec.response);
    }
    if ((content === null || content === '') && calls.length === 0) fail('response_text', 'a non-empty response or tool calls', content);

    if (rec.next_state !== undefined && rec.next_state !== null && !isObject(rec.next_state))
      fail('next_state', 'a message object or null', rec.next_state);
    const nextMessages = isObject(rec.next_state) ? [chatMessage(rec.next_state, 'next_state')] : [];
    const sessionDone = rec.session_done !== undefined ? boolOf(rec.session_done) : 'next_state' in rec && rec.next_state === null;
    const at = rec.timestamp ?? rec.created_at ?? rec.requested_at;
    const requestedAt = timestampOr(at, 'timestamp', now);
    const completedAt = timestampOr(rec.completed_at, 'completed_at', () => requestedAt);
    const parsed = toEvents({
      sessionId,
      turnIndex,
      userId: optString(rec, ['user_id', 'userId', 'user']),
      turnType: turnTypeOf(rec.turn_type ?? rec.turnType, 'turn_type'),
      sessionDone,
      requestedAt,
      completedAt,
      model: optString(rec, ['model']),
      requestMessages,
      toolsJson: toolsJsonOf(rec.tools, 'tools'),
      response: { content, toolCalls: calls, finishReason: finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop') },
      usage: usageOf(rec.usage),
      feedback: feedbackOf(rec),
      nextMessages,
    });
    return { ...parsed, nextStates: nextMessages.length > 0 ? 1 : 0 };
  };
}
