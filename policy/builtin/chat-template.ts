import { invalidInput } from '../../core/index.ts';
import type { ByteTokenizer } from './tokenizer.ts';

/** Roles the built-in model knows. The gateway flattens content parts to a string first. */
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

export interface RenderPromptOptions {
  /**
   * Upper bound on the rendered prompt's length in tokens (≥ 4: `<|bos|>`, a role, `<|end|>`,
   * `<|assistant|>`).
   */
  maxPromptTokens: number;
}

export interface RenderedPrompt {
  /** Token ids: `<|bos|>` (`<|role|>` content `<|end|>`)* `<|assistant|>`. */
  ids: number[];
  /** How many tokens the truncation policy removed (0 when the prompt fitted). */
  truncatedTokens: number;
}

interface Segment {
  role: ChatRole;
  bytes: number[];
  index: number;
}

const segLen = (s: Segment): number => s.bytes.length + 2;

/** Drops at least `n` bytes from the start of `bytes`, then any UTF-8 continuation bytes, so text starts on a character. */
function trimStart(bytes: number[], n: number): number[] {
  let i = Math.min(n, bytes.length);
  while (i < bytes.length && (bytes[i] & 0xc0) === 0x80) i++;
  return bytes.slice(i);
}

/**
 * Renders chat messages for the built-in model:
 * `<|bos|>` then, per message, `<|role|>` content-bytes `<|end|>`, then a final `<|assistant|>`.
 * The assistant's answer is the generated ids followed by `<|end|>` (`<|eos|>` also stops).
 *
 * Truncation policy (never an error; the result has at most `maxPromptTokens` tokens):
 * 1. The last message and the last user message are kept; the other non-system messages are
 *    dropped, oldest first, until the prompt fits.
 * 2. Then system prompts are trimmed from their START (their tail, usually the most specific
 *    instructions, is kept); a system message left empty is dropped whole.
 * 3. Then the last message is trimmed from its start, then the last user message (when it is a
 *    different message), and finally that last user message is dropped.
 * `<|bos|>` and the final `<|assistant|>` are always kept. Trimming never starts text inside a
 * UTF-8 character, so a prompt can come out a few tokens shorter than the bound.
 */
export function renderPrompt(tokenizer: ByteTokenizer, messages: readonly ChatMessage[], options: RenderPromptOptions): RenderedPrompt {
  const max = options.maxPromptTokens;
  if (!Number.isInteger(max) || max < 4) {
    throw invalidInput(`maxPromptTokens must be an integer ≥ 4, got ${max}`, 'maxPromptTokens');
  }
  if (messages.length === 0) throw invalidInput('messages must not be empty', 'messages');
  let segs: Segment[] = messages.map((m, index) => {
    if (roleToken(tokenizer, m.role) === undefined) {
      throw invalidInput(`unknown message role ${JSON.stringify(m.role)}`, `messages[${index}].role`);
    }
    return { role: m.role, bytes: tokenizer.encode(m.content ?? ''), index };
  });
  const total = (): number => 2 + segs.reduce((a, s) => a + segLen(s), 0);
  const full = total();

  const lastIndex = segs.length - 1;
  let lastUser = -1;
  for (const s of segs) if (s.role === 'user') lastUser = s.index;
  const isKept = (s: Segment): boolean => s.index === lastIndex || s.index === lastUser;

  // 1. Oldest droppable history first.
  for (const s of [...segs]) {
    if (total() <= max) break;
    if (s.role !== 'system' && !isKept(s)) segs = segs.filter((x) => x !== s);
  }
  // 2. System prompts, from their start.
  for (const s of segs) {
    const excess = total() - max;
    if (excess <= 0) break;
    if (s.role === 'system' && !isKept(s)) s.bytes = trimStart(s.bytes, excess);
  }
  for (const s of [...segs]) {
    if (total() <= max) break;
    if (s.role === 'system' && !isKept(s) && s.bytes.length === 0) segs = segs.filter((x) => x !== s);
  }
  // 3. The last message, then the last user message, from their start.
  const kept = segs.filter(isKept).sort((a, b) => b.index - a.index);
  for (const s of kept) {
    const excess = total() - max;
    if (excess <= 0) break;
    s.bytes = trimStart(s.bytes, excess);
  }
  if (total() > max && kept.length > 1) segs = segs.filter((x) => x !== kept[1]);

  const ids: number[] = [tokenizer.bos];
  for (const s of segs) ids.push(roleToken(tokenizer, s.role)!, ...s.bytes, tokenizer.end);
  ids.push(tokenizer.assistant);
  return { ids, truncatedTokens: full - ids.length };
}

function roleToken(tokenizer: ByteTokenizer, role: string): number | undefined {
  switch (role) {
    case 'system':
      return tokenizer.system;
    case 'user':
      return tokenizer.user;
    case 'assistant':
      return tokenizer.assistant;
    case 'tool':
      return tokenizer.tool;
    default:
      return undefined;
  }
}
