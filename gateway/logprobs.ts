/**
 * OpenAI's `choices[].logprobs` shape, and how the built-in engine's byte-level tokens are
 * rendered in it. A byte token is one UTF-8 byte, so a character outside ASCII spans several
 * tokens none of which is text on its own: such a token's `token` is its escaped byte
 * (`"\\xc3"`, the form OpenAI-compatible APIs use for partial tokens) and `bytes` carries the
 * raw byte, so a client rebuilds the text by concatenating `bytes`. Special tokens (`<|end|>`)
 * keep their name and have `bytes: null` (they are not text).
 */
import type { ByteTokenizer } from '../policy/index.ts';

/** One alternative at a position (`top_logprobs[]`). */
export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

/** One generated token (`logprobs.content[]`). */
export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

/** `choices[].logprobs` of a response or of a stream chunk. */
export interface ChoiceLogprobs {
  content: TokenLogprob[] | null;
  refusal: TokenLogprob[] | null;
}

/** `token` and `bytes` of one id of the byte-level tokenizer. */
export function renderByteToken(id: number, tokenizer: ByteTokenizer): { token: string; bytes: number[] | null } {
  if (tokenizer.isSpecial(id)) return { token: tokenizer.decode([id]), bytes: null };
  return { token: id < 0x80 ? String.fromCharCode(id) : `\\x${id.toString(16).padStart(2, '0')}`, bytes: [id] };
}

/** The `logprobs.content` entry of a generated token and its alternatives. */
export function tokenLogprob(
  tokenizer: ByteTokenizer,
  id: number,
  logprob: number,
  top: ReadonlyArray<{ id: number; logprob: number }> = [],
): TokenLogprob {
  const entry = (i: number, lp: number): TopLogprob => {
    const { token, bytes } = renderByteToken(i, tokenizer);
    return { token, logprob: lp, bytes }; // OpenAI's key order
  };
  return { ...entry(id, logprob), top_logprobs: top.map((t) => entry(t.id, t.logprob)) };
}
