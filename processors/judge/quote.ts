/**
 * Quoting conversation text as data inside a judge prompt. The text cannot close the block it is
 * quoted in, cannot add a `\boxed{}` the parser would read if the judge echoed it, and cannot
 * forge a hint block.
 */
import type { NextStateItem, PairTurn } from '../../schemas/index.ts';

/** Tags the prompts use; data may not contain them verbatim. */
const TAGS = /<(\/?)(context|assistant_output|next_state|quote)\b/gi;

/** @param maxChars longer text keeps its start and end around an elision mark. */
export function quote(text: string, maxChars: number): string {
  let t = text;
  if (t.length > maxChars) {
    const head = Math.ceil(maxChars * 0.6);
    const tail = maxChars - head;
    t = `${t.slice(0, head)}\n[… ${t.length - maxChars} characters omitted …]\n${t.slice(t.length - tail)}`;
  }
  return t
    .replace(TAGS, '‹$1$2')
    .replace(/\\boxed/g, '\\\\ boxed')
    .replace(/\[HINT_(START|END)\]/g, '[HINT-$1]');
}

/** The assistant's output at turn t as text: content and any tool calls. */
export function renderAssistantOutput(turn: PairTurn, maxChars: number): string {
  const parts: string[] = [];
  if (turn.response.content) parts.push(turn.response.content);
  for (const c of turn.response.toolCalls) parts.push(`[tool call ${c.id}] ${c.name}(${c.arguments})`);
  return quote(parts.join('\n') || '(empty response)', maxChars);
}

/** The last user message of turn t's request: what the assistant was answering. */
export function lastUserMessage(turn: PairTurn): string | null {
  for (let i = turn.requestMessages.length - 1; i >= 0; i--) {
    const m = turn.requestMessages[i];
    if (m.role === 'user') return m.content ?? '';
  }
  return null;
}

export function renderNextState(items: readonly NextStateItem[], maxChars: number): string {
  return items
    .map((item) => {
      const id = item.toolCallId ? ` tool_call_id="${item.toolCallId.replace(/[^\w.:-]/g, '_')}"` : '';
      return `<next_state role="${item.role.toLowerCase()}"${id}>\n${quote(item.content, maxChars)}\n</next_state>`;
    })
    .join('\n');
}
