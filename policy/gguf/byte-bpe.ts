/**
 * A small byte-level BPE vocabulary in GPT-2's form, as llama.cpp's `gpt2` tokenizer model reads
 * it: every byte as its GPT-2 unicode stand-in (so any text tokenizes), merges learnt from a short
 * built-in English text, and ChatML's special tokens. Used by the tiny test models.
 */

/** GPT-2's byte → printable character mapping (bytes_to_unicode). */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const printable = (b: number): boolean => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const out: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(printable(b) ? b : 256 + extra++);
  return out;
})();

/** Text → its UTF-8 bytes spelled with {@link BYTE_TO_UNICODE}. */
export const toByteSymbols = (text: string): string[] => [...Buffer.from(text, 'utf8')].map((b) => BYTE_TO_UNICODE[b]);

/** The words BPE merges within: GPT-2's pre-tokenizer pattern. */
const WORDS = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** A short English text the tiny vocabulary learns its merges from. */
export const BPE_TRAINING_TEXT = [
  'You are a helpful assistant. The user asks a question and the assistant answers it.',
  'What is the capital of France? The capital of France is Paris.',
  'Hello! How can I help you today? I would like to know more about the weather in the city.',
  'Thank you for the answer, that was very helpful. Please tell me something about the river and the sea.',
  'The model learns from the conversations it has with the people who talk to it, one turn at a time.',
  'In the morning the sun comes up, and in the evening it goes down again over the hills and the water.',
].join('\n');

/** A learnt vocabulary: merges in rank order and the tokens they create. */
export interface BytePairMerges {
  /** `"Ġ t"`: two symbols separated by one space, in rank order. */
  merges: string[];
  /** The tokens the merges create, in order of creation (two merges may create the same token). */
  tokens: string[];
}

/**
 * Learns `count` merges from `text` (fewer when the text runs out of pairs). Ties between
 * equally frequent pairs go to the lexicographically smaller one, so the result is deterministic.
 */
export function learnMerges(text: string, count: number): BytePairMerges {
  const words = new Map<string, { symbols: string[]; freq: number }>();
  for (const w of text.match(WORDS) ?? []) {
    const entry = words.get(w);
    if (entry) entry.freq++;
    else words.set(w, { symbols: toByteSymbols(w), freq: 1 });
  }
  const merges: string[] = [];
  const tokens: string[] = [];
  const known = new Set(BYTE_TO_UNICODE);
  while (merges.length < count) {
    const pairs = new Map<string, number>();
    for (const { symbols, freq } of words.values()) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = `${symbols[i]} ${symbols[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + freq);
      }
    }
    let best: string | undefined;
    let bestFreq = 1; // a pair seen once is not worth a token
    for (const [key, freq] of pairs) {
      if (freq > bestFreq || (freq === bestFreq && best !== undefined && key < best)) {
        best = key;
        bestFreq = freq;
      }
    }
    if (best === undefined) break;
    const [left, right] = best.split(' ');
    const merged = left + right;
    for (const w of words.values()) {
      const s = w.symbols;
      const next: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === left && s[i + 1] === right) {
          next.push(merged);
          i++;
        } else next.push(s[i]);
      }
      w.symbols = next;
    }
    merges.push(best);
    if (!known.has(merged)) {
      known.add(merged);
      tokens.push(merged);
    }
  }
  return { merges, tokens };
}
