/**
 * `openai-chat`: one conversation per line, OpenAI chat format:
 *
 *   {"messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", ...}, ...],
 *    "session_id"?: "abc", "user"?: "alice", "timestamp"?: "2026-02-14T20:00:00Z",
 *    "model"?: "...", "tools"?: [...], "turn_type"?: "main"|"side"}
 *
 * Every assistant message is one turn whose request is the history before it (an assistant
 * message with nothing before it, a greeting, is not a turn). Each turn's next state is what the
 * next turn's request adds after it (the user's reply, tool results), as for live turns. The
 * conversation's last turn closes the session (`sessionDone`); the messages after it (the user's
 * last word, often the verdict: "👎", "perfect!") travel with it as `nextMessages` and become its
 * next state. A message may carry its own `timestamp`: an assistant message's is
 * its turn's completion time, the message before it its request time; else the line's
 * `timestamp`; else the import time. Session id: `session_id` (or `id`, `conversation_id`), else a
 * hash of the conversation, so re-imports match. Explicit feedback on a turn: a non-standard
 * `feedback` (`{rating, text}` or a list) or `rating` field on the assistant message.
 */
import { deterministicId } from '../../schemas/index.ts';
import {
  chatMessage,
  fail,
  feedbackFields,
  jsonLine,
  optString,
  timestampOr,
  toEvents,
  toolsJsonOf,
  turnTypeOf,
  usageOf,
  type Json,
  type ParsedLine,
} from './common.ts';

export function openaiChatParser(now: () => number = Date.now): (rec: unknown) => ParsedLine {
  return (line) => {
    const rec = jsonLine(line);
    if (!Array.isArray(rec.messages) || rec.messages.length === 0) fail('messages', 'a non-empty array of messages', rec.messages);
    const raw = rec.messages as unknown[];
    const messages = raw.map((m, i) => chatMessage(m, `messages[${i}]`));
    const sessionId =
      optString(rec, ['session_id', 'sessionId', 'id', 'conversation_id']) ??
      `import-${deterministicId('conversation', JSON.stringify(messages))}`;
    const userId = optString(rec, ['user', 'user_id', 'userId']);
    const turnType = turnTypeOf(rec.turn_type ?? rec.turnType, 'turn_type');
    const lineAt = rec.timestamp ?? rec.created_at;
    const base = timestampOr(lineAt, 'timestamp', now);
    const stamp = (i: number): number | null => {
      const m = raw[i] as Json;
      return timestampOr(m.timestamp, `messages[${i}].timestamp`, () => null);
    };
    const assistants = messages.map((m, i) => (m.role === 'assistant' && i > 0 ? i : -1)).filter((i) => i >= 0);
    if (assistants.length === 0)
      fail(
        'messages',
        'at least one assistant message after a request',
        rec.messages.map((m: Json) => m?.role),
      );
    const last = assistants[assistants.length - 1];
    const after = messages.slice(last + 1).filter((m) => m.role !== 'system' && m.role !== 'developer');
    const out: ParsedLine = { turns: [], feedback: [], nextStates: assistants.length - 1 + (after.length > 0 ? 1 : 0) };
    assistants.forEach((i, k) => {
      const a = messages[i];
      if ((a.content === null || a.content === '') && a.toolCalls.length === 0)
        fail(`messages[${i}]`, 'an assistant message with content or tool calls', raw[i]);
      const requestedAt = stamp(i - 1) ?? base;
      const completedAt = stamp(i) ?? requestedAt;
      const parsed = toEvents({
        sessionId,
        turnIndex: k,
        userId,
        turnType,
        sessionDone: k === assistants.length - 1,
        requestedAt,
        completedAt,
        model: optString(rec, ['model']),
        requestMessages: messages.slice(0, i),
        toolsJson: toolsJsonOf(rec.tools, 'tools'),
        response: { content: a.content, toolCalls: a.toolCalls, finishReason: a.toolCalls.length > 0 ? 'tool_calls' : 'stop' },
        usage: usageOf((raw[i] as Json).usage),
        feedback: feedbackFields(raw[i] as Json, `messages[${i}].`) ?? [],
        nextMessages: i === last ? after : [],
      });
      out.turns.push(...parsed.turns);
      out.feedback.push(...parsed.feedback);
    });
    return out;
  };
}
