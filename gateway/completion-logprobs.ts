/**
 * The legacy completions' `logprobs` shape (`tokens`, `token_logprobs`, `top_logprobs` as
 * token → log-prob maps, `text_offset` into the choice's text), built from the entries the
 * engines give for chat (`logprobs.content`). Offsets count characters of the returned text, the
 * echoed prompt included; a token that is part of a character (a byte token) counts for what it
 * adds once decoded with the tokens before it, a control token (no bytes) for nothing.
 */
import type { PromptTokenLogprob } from './engine.ts';
import type { TokenLogprob } from './logprobs.ts';

export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
  text_offset: number[];
}

/** Builds a choice's legacy log-probs chunk by chunk, keeping the text offset between them. */
export class CompletionLogprobsBuilder {
  private bytes: number[] = [];
  private chars = 0;

  /** Appends `entries` (prompt entries have a null log-prob for the first token) and returns them in the legacy shape. */
  add(entries: ReadonlyArray<TokenLogprob | PromptTokenLogprob>): CompletionLogprobs {
    const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    for (const e of entries) {
      out.tokens.push(e.token);
      out.token_logprobs.push(e.logprob);
      out.top_logprobs.push(e.logprob === null ? null : topOf(e.top_logprobs));
      out.text_offset.push(this.chars);
      this.advance(e);
    }
    return out;
  }

  /** Text that has no entries (an echoed prompt without its log-probs) still moves the offsets. */
  skip(text: string): void {
    this.chars += text.length;
  }

  private advance(e: { token: string; bytes: number[] | null }): void {
    if (!e.bytes) return; // a control token (the end of generation) is no part of the text

    // Decode what is complete so far; a character split across tokens counts once whole.
    this.bytes.push(...e.bytes);
    const text = Buffer.from(this.bytes).toString('utf8');
    const complete = text.endsWith('\ufffd') ? text.replace(/\ufffd+$/, '') : text;
    const done = Buffer.byteLength(complete);
    this.chars += complete.length;
    this.bytes = this.bytes.slice(done);
  }
}

function topOf(top: ReadonlyArray<{ token: string; logprob: number }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of top) if (!(t.token in out) || out[t.token] < t.logprob) out[t.token] = t.logprob;
  return out;
}
