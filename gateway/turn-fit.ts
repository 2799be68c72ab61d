/**
 * Fitting a Turn into its topic. Every Turn is sized (its Avro encoding) before it enters the
 * outbox; one larger than the topic allows (`max.message.bytes` less RECORD_OVERHEAD_BYTES) is
 * shrunk by this rule, so that it can never block the outbox:
 *
 * 1. Only texts are cut: message contents, the answer, tool call arguments and `tools`. All the
 *    texts longer than a common length L (UTF-8 bytes) are cut to L, keeping their head (60 %)
 *    and tail around a marker `[… N characters truncated by turnstream …]`; shorter texts are
 *    kept whole. L is the largest length that makes the Turn fit.
 * 2. Token ids and log-probs are what the engine used and stay whole; only if they alone
 *    overflow the topic (hundreds of thousands of tokens) are they left out, and the Turn is
 *    marked untokenized (judged, never trained on token level).
 * 3. The Turn records it in `truncation` (original size, texts cut, L, whether token ids were
 *    dropped, where the whole Turn is kept).
 */
import type { ChatMessage, ToolCall, Turn, TurnTruncation } from '../schemas/index.ts';
import { encodedSize } from '../schemas/index.ts';

/** A settable text of a Turn. */
interface Text {
  get(): string;
  set(v: string): void;
}

function texts(t: Turn): Text[] {
  const out: Text[] = [];
  const calls = (list: ToolCall[]) => {
    for (const c of list) out.push({ get: () => c.arguments, set: (v) => void (c.arguments = v) });
  };
  for (const m of t.requestMessages as ChatMessage[]) {
    if (m.content !== null) out.push({ get: () => m.content ?? '', set: (v) => void (m.content = v) });
    calls(m.toolCalls);
  }
  const r = t.response;
  if (r.content !== null) out.push({ get: () => r.content ?? '', set: (v) => void (r.content = v) });
  calls(r.toolCalls);
  if (t.toolsJson !== null) out.push({ get: () => t.toolsJson ?? '', set: (v) => void (t.toolsJson = v) });
  return out;
}

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** `s` cut to at most `max` UTF-8 bytes: head and tail around a marker (never a split surrogate pair). */
export function cutText(s: string, max: number): string {
  if (bytes(s) <= max) return s;
  const ratio = bytes(s) / s.length;
  let keep = Math.floor(max / ratio);
  for (;;) {
    const marker = `\n[… ${s.length - keep} characters truncated by turnstream …]\n`;
    if (bytes(marker) >= max) return headOf(s, max);
    const room = Math.max(0, keep - Math.ceil(bytes(marker) / ratio));
    let head = Math.ceil(room * 0.6);
    let tail = s.length - (room - head);
    if (/[\uDC00-\uDFFF]/.test(s.charAt(head))) head--;
    if (/[\uDC00-\uDFFF]/.test(s.charAt(tail))) tail++;
    const out = `${s.slice(0, head)}${marker}${s.slice(tail)}`;
    if (bytes(out) <= max || keep === 0) return out;
    keep = Math.floor(keep * 0.9);
  }
}

/** The longest start of `s` of at most `max` UTF-8 bytes (whole characters). */
function headOf(s: string, max: number): string {
  let used = 0;
  let i = 0;
  for (const ch of s) {
    const n = bytes(ch);
    if (used + n > max) break;
    used += n;
    i += ch.length;
  }
  return s.slice(0, i);
}

const clone = (t: Turn): Turn => structuredClone(t);

/** The largest L with Σ min(length, L) ≤ budget. */
export function waterLevel(lengths: number[], budget: number): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  let used = 0;
  for (let i = 0; i < sorted.length; i++) {
    const rest = sorted.length - i;
    // Every text from i on is cut to L: L = (budget − used) / rest, if that is below sorted[i].
    if (used + sorted[i] * rest > budget) return Math.max(0, Math.floor((budget - used) / rest));
    used += sorted[i];
  }
  return sorted.length ? sorted[sorted.length - 1] : 0;
}

/**
 * The Turn as it fits in `maxBytes` (encoded), and how it was shrunk (null when it fitted).
 * `keptIn` goes into the record of a shrunk Turn.
 */
export function fitTurn(turn: Turn, maxBytes: number, keptIn: string | null = null): { turn: Turn; truncation: TurnTruncation | null } {
  const originalBytes = encodedSize('turns', turn);
  if (originalBytes <= maxBytes) return { turn, truncation: null };
  const t = clone(turn);
  const record = (over: Turn, fields: number, maxFieldBytes: number, tokenIdsDropped: boolean): Turn => {
    over.truncation = { originalBytes, truncatedFields: fields, maxFieldBytes, tokenIdsDropped, keptIn };
    return over;
  };
  // What is left with every text empty; the rest of the budget goes to the texts.
  const bare = clone(t);
  for (const x of texts(bare)) x.set('');
  let tokenIdsDropped = false;
  if (encodedSize('turns', record(bare, 0, 0, false)) > maxBytes) {
    tokenIdsDropped = true;
    for (const x of [t, bare]) {
      x.promptTokenIds = [];
      x.responseTokenIds = [];
      x.responseLogprobs = [];
      x.tokenized = false;
    }
  }
  const lengths = texts(t).map((x) => bytes(x.get()));
  // The common length L by water-filling the bytes left once everything but the texts is
  // counted (with room for each cut text's marker); checked by encoding, and lowered until it fits.
  const fixed = encodedSize('turns', record(bare, lengths.length, 0, tokenIdsDropped));
  const room = maxBytes - fixed - lengths.length * 80;
  let L = waterLevel(lengths, Math.max(0, room));
  let best: Turn | null = null;
  for (let attempt = 0; attempt < 20 && !best; attempt++) {
    const candidate = clone(t);
    let cut = 0;
    for (const x of texts(candidate)) {
      const v = x.get();
      if (bytes(v) > L) {
        x.set(cutText(v, L));
        cut++;
      }
    }
    record(candidate, cut, L, tokenIdsDropped);
    if (encodedSize('turns', candidate) <= maxBytes) best = candidate;
    else L = Math.floor(L * 0.9);
  }
  if (!best) {
    // Not even empty texts fit (only possible with a tiny budget): the texts go entirely.
    best = clone(t);
    for (const x of texts(best)) x.set('');
    record(best, lengths.filter((n) => n > 0).length, 0, tokenIdsDropped);
  }
  return { turn: best, truncation: best.truncation as TurnTruncation };
}
