import { invalidInput } from '../../core/index.ts';

/** Special tokens, in id order after the 256 byte ids. */
export const SPECIAL_TOKENS = ['<|bos|>', '<|eos|>', '<|system|>', '<|user|>', '<|assistant|>', '<|tool|>', '<|end|>', '<|pad|>'] as const;

export type SpecialToken = (typeof SPECIAL_TOKENS)[number];

/** Number of byte ids (0..255). */
export const BYTE_VOCAB = 256;

/**
 * Byte-level tokenizer: ids 0..255 are the UTF-8 bytes of the text, the special tokens follow.
 * `encode` never produces special ids from text (a literal "<|end|>" in user content stays bytes),
 * so user content cannot inject control tokens.
 */
export class ByteTokenizer {
  readonly vocabSize = BYTE_VOCAB + SPECIAL_TOKENS.length;
  readonly bos = BYTE_VOCAB + 0;
  readonly eos = BYTE_VOCAB + 1;
  readonly system = BYTE_VOCAB + 2;
  readonly user = BYTE_VOCAB + 3;
  readonly assistant = BYTE_VOCAB + 4;
  readonly tool = BYTE_VOCAB + 5;
  readonly end = BYTE_VOCAB + 6;
  readonly pad = BYTE_VOCAB + 7;

  /** Id of a special token. */
  special(token: SpecialToken): number {
    return BYTE_VOCAB + SPECIAL_TOKENS.indexOf(token);
  }

  /** True for ids that are not bytes. */
  isSpecial(id: number): boolean {
    return id >= BYTE_VOCAB;
  }

  /** UTF-8 bytes of `text` as ids. */
  encode(text: string): number[] {
    return Array.from(Buffer.from(text, 'utf8'));
  }

  /**
   * Text of `ids`. Special ids are rendered as their names unless `skipSpecial` is set;
   * invalid or incomplete UTF-8 becomes U+FFFD.
   */
  decode(ids: readonly number[], options: { skipSpecial?: boolean } = {}): string {
    const out: string[] = [];
    let bytes: number[] = [];
    const flush = (): void => {
      if (bytes.length) out.push(Buffer.from(bytes).toString('utf8'));
      bytes = [];
    };
    for (const id of ids) {
      this.check(id);
      if (id < BYTE_VOCAB) bytes.push(id);
      else {
        flush();
        if (!options.skipSpecial) out.push(SPECIAL_TOKENS[id - BYTE_VOCAB]);
      }
    }
    flush();
    return out.join('');
  }

  /** A decoder for token streaming: text comes out only when bytes form complete characters. */
  streamDecoder(): StreamDecoder {
    return new StreamDecoder(this);
  }

  check(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw invalidInput(`token id ${id} is outside the vocabulary [0, ${this.vocabSize})`);
    }
  }
}

/**
 * Incremental UTF-8 decoder. `push(id)` returns the text completed by this token ('' while a
 * multi-byte character is still incomplete); special ids return '' and are not text.
 * `flush()` returns what is left (an incomplete tail becomes U+FFFD).
 */
export class StreamDecoder {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  private readonly tokenizer: ByteTokenizer;

  constructor(tokenizer: ByteTokenizer) {
    this.tokenizer = tokenizer;
  }

  push(id: number): string {
    this.tokenizer.check(id);
    if (this.tokenizer.isSpecial(id)) return '';
    return this.decoder.decode(Uint8Array.of(id), { stream: true });
  }

  flush(): string {
    return this.decoder.decode();
  }
}
