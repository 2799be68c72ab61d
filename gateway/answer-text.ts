/**
 * The text of an answer as llama.cpp's tokens arrive (llama-engine.ts): what may be streamed now
 * and what the answer is once generation ends.
 */
import type { ChatFormat } from '../policy/index.ts';

/**
 * The answer's text as tokens arrive: what may be shown now, holding back a partial UTF-8
 * character, the start of a stop string, and everything from a tool call on.
 */
export class AnswerText {
  private text = '';
  private emitted = 0;
  private cut: number | null = null;
  private toolAt: number | null = null;

  constructor(
    private readonly stops: string[],
    private readonly toolPrefix: string,
    /** Trailing whitespace is no part of the answer (a grammar's end). */
    private readonly trimEnd = false,
  ) {}

  /** A tool call is complete in the text (its syntax closed). */
  hasToolCall(format: Pick<ChatFormat, 'parse'>): boolean {
    return this.toolAt !== null && format.parse(this.text).toolCalls.length > 0;
  }

  /** `full` is the whole answer so far; returns the newly showable text. */
  push(full: string): { delta: string; stopped: boolean } {
    this.text = full;
    let stopped = false;
    for (const s of this.stops) {
      const i = s ? full.indexOf(s, Math.max(0, this.emitted - s.length)) : -1;
      if (i >= 0 && (this.cut === null || i < this.cut)) {
        this.cut = i;
        stopped = true;
      }
    }
    if (this.toolPrefix && this.toolAt === null) {
      const i = full.indexOf(this.toolPrefix);
      if (i >= 0) this.toolAt = i;
    }
    let safe = this.cut ?? full.length;
    if (this.toolAt !== null) safe = Math.min(safe, this.toolAt);
    if (this.cut === null) {
      while (safe > this.emitted && full.charCodeAt(safe - 1) === 0xfffd) safe--;
      for (const s of [...this.stops, this.toolPrefix]) safe = Math.min(safe, full.length - partialSuffix(full, s));
    }
    const delta = safe > this.emitted ? full.slice(this.emitted, safe) : '';
    this.emitted = Math.max(this.emitted, safe);
    return { delta, stopped };
  }

  /** The final text (before any stop string) and what was still held back of it. */
  finish(): { text: string; delta: string } {
    let text = this.cut === null ? this.text : this.text.slice(0, this.cut);
    if (this.trimEnd) text = text.slice(0, Math.max(this.emitted, text.trimEnd().length));
    const end = this.toolAt !== null ? Math.min(this.toolAt, text.length) : text.length;
    const delta = end > this.emitted ? text.slice(this.emitted, end) : '';
    this.emitted = Math.max(this.emitted, end);
    return { text, delta };
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `s`. */
function partialSuffix(text: string, s: string): number {
  for (let n = Math.min(s.length - 1, text.length); n > 0; n--) if (text.endsWith(s.slice(0, n))) return n;
  return 0;
}
