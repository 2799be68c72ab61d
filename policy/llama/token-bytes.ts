/**
 * The bytes each token of a GGUF vocabulary stands for, for OpenAI's `logprobs[].bytes`: a
 * token may be part of a UTF-8 character, so its text alone cannot rebuild the answer.
 * Byte-level BPE vocabularies (`gpt2`) spell bytes with GPT-2's byte→character table;
 * SentencePiece ones (`llama`) use `▁` for a space and `<0xNN>` for raw bytes. Control tokens
 * have no bytes.
 */
import { BYTE_TO_UNICODE } from '../gguf/byte-bpe.ts';

const CONTROL = 3;

const gpt2CharToByte = (): Map<string, number> => new Map(BYTE_TO_UNICODE.map((ch, b) => [ch, b]));

export class TokenBytes {
  private readonly table: Map<string, number> | null;

  constructor(
    private readonly tokens: readonly string[],
    private readonly types: readonly number[] | undefined,
    private readonly kind: string,
  ) {
    this.table = kind === 'gpt2' ? gpt2CharToByte() : null;
  }

  /** The token's bytes, or null for a control token (or an id outside the vocabulary). */
  bytes(id: number): number[] | null {
    const text = this.tokens[id];
    if (text === undefined || this.types?.[id] === CONTROL) return null;
    if (this.table) {
      const out: number[] = [];
      for (const ch of text) {
        const b = this.table.get(ch);
        if (b === undefined) return [...Buffer.from(text, 'utf8')]; // an added token spelled in plain text
        out.push(b);
      }
      return out;
    }
    const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
    if (byte) return [parseInt(byte[1], 16)];
    return [...Buffer.from(text.replace(/\u2581/g, ' '), 'utf8')];
  }
}
