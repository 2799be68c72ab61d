/**
 * Keeps a grammar-constrained answer valid UTF-8, token by token.
 *
 * llama.cpp's grammar reads the answer's bytes as code points leniently: a lead byte followed by
 * a byte that does not continue it still counts as one character. The answer's text (decoded
 * strictly, as every client does) then has replacement characters the grammar never counted,
 * and a string the schema bounds (`maxLength`) comes out longer than it allows. So while a
 * grammar constrains an answer, the tokens that would make its bytes invalid UTF-8 from where
 * it stands are banned: at a character boundary, tokens that begin with a continuation byte or
 * hold an invalid sequence; inside a character, tokens that do not continue it. A model that
 * writes valid UTF-8 anyway is not affected.
 *
 * The states are UTF-8's: at a boundary, or inside a character with 1–3 continuation bytes to
 * come, the first of which may have a narrower range (after E0, ED, F0, F4: no overlong forms,
 * no surrogates, nothing above U+10FFFF). The bans of a state are computed once per vocabulary.
 */

/** Where a byte stream stands: continuation bytes still to come, and the range the next one must be in. */
export interface Utf8State {
  need: number;
  lo: number;
  hi: number;
}

export const BOUNDARY: Utf8State = Object.freeze({ need: 0, lo: 0x80, hi: 0xbf });

const keyOf = (s: Utf8State): string => `${s.need}:${s.lo}:${s.hi}`;

/** The state after `bytes` from `state`, or null if they are not valid UTF-8 from there. */
export function utf8Step(state: Utf8State, bytes: readonly number[]): Utf8State | null {
  let { need, lo, hi } = state;
  for (const b of bytes) {
    if (need > 0) {
      if (b < lo || b > hi) return null;
      need--;
      lo = 0x80;
      hi = 0xbf;
      continue;
    }
    if (b < 0x80) continue;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b === 0xe0) [need, lo] = [2, 0xa0];
    else if (b === 0xed) [need, hi] = [2, 0x9f];
    else if (b >= 0xe1 && b <= 0xef) need = 2;
    else if (b === 0xf0) [need, lo] = [3, 0x90];
    else if (b === 0xf4) [need, hi] = [3, 0x8f];
    else if (b >= 0xf1 && b <= 0xf3) need = 3;
    else return null; // a continuation byte at a boundary, C0, C1, F5–FF
  }
  return { need, lo, hi };
}

/** The banned tokens of each state, for one vocabulary. */
export class Utf8Bans {
  private readonly byState = new Map<string, number[]>();

  /**
   * @param bytesOf a token's bytes; null for a control token (allowed at a boundary only).
   * @param vocabSize tokens in the vocabulary.
   */
  constructor(
    private readonly bytesOf: (id: number) => readonly number[] | null,
    private readonly vocabSize: number,
  ) {}

  /** Tokens that would leave invalid UTF-8 after `state`. */
  banned(state: Utf8State): readonly number[] {
    const key = keyOf(state);
    let out = this.byState.get(key);
    if (!out) {
      out = [];
      for (let id = 0; id < this.vocabSize; id++) {
        const bytes = this.bytesOf(id);
        if (bytes === null ? state.need > 0 : utf8Step(state, bytes) === null) out.push(id);
      }
      this.byState.set(key, out);
    }
    return out;
  }
}

/** One answer's UTF-8 state and the bias (made by `make` from a state's bans) for where it stands. */
export class Utf8Track<B> {
  private state: Utf8State = BOUNDARY;
  private readonly biases = new Map<string, B>();

  constructor(
    private readonly bans: Utf8Bans,
    private readonly make: (banned: readonly number[]) => B,
  ) {}

  /** The bias for the next token. */
  bias(): B {
    const key = keyOf(this.state);
    let b = this.biases.get(key);
    if (b === undefined) {
      b = this.make(this.bans.banned(this.state));
      this.biases.set(key, b);
    }
    return b;
  }

  /** The answer went on with a token of these bytes (null: a control token). */
  advance(bytes: readonly number[] | null): void {
    if (bytes !== null) this.state = utf8Step(this.state, bytes) ?? BOUNDARY;
  }
}
