/**
 * The traffic of a chaos scenario, as clients send it: multi-turn conversations (the history
 * resent each turn, an `Idempotency-Key` per turn so a retried call keeps its turn id, a
 * stream now and then, 👍/👎 and corrections so the judge scores and the learner trains),
 * retried through a fault until answered; probe calls that time the recovery; and slow
 * streaming readers.
 */
import net from 'node:net';

export interface CallResult {
  turnId: string;
  sessionId: string;
  /** Milliseconds of the attempt that was answered. */
  ms: number;
  /** When it was sent (the answered attempt). */
  at: number;
  attempts: number;
}

export interface LoadOptions {
  /** The gateway, or several (see `affinity`). */
  url: string | readonly string[];
  /**
   * With several gateways: `session` sends every call of a conversation (and its retries and
   * 👍/👎) to one gateway, as a load balancer keyed by X-Session-Id; `none` sends each call to the
   * next gateway in turn, a retry to the one after it, and a 👍/👎 to another than the one that
   * answered. @default 'session'
   */
  affinity?: 'session' | 'none';
  /** Session ids start with this (the scenario's own). */
  prefix: string;
  /** Calls in all. */
  calls: number;
  /** Turns per conversation. @default 4 */
  turnsPerSession?: number;
  /** Conversations running at once. @default 4 */
  concurrency?: number;
  /** Called after each answered call (faults are injected from here). */
  onAnswered?: (answered: number) => void | Promise<void>;
  /** Give up on a call after this long (a fault that never heals). @default 240000 */
  giveUpMs?: number;
  /** The user each conversation's calls are made for. @default one per conversation */
  userOf?: (session: number) => string;
}

export interface LoadResult {
  answered: CallResult[];
  /** Calls never answered (their turn may still have been captured). */
  unanswered: number;
  /** Feedback events accepted. */
  feedback: number;
}

const REPLIES = [
  'thanks, that helps!',
  "No, that's too long.",
  'ok, and what else?',
  'great answer 👍',
  'That is wrong, try again.',
  'tell me more',
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Message {
  role: string;
  content: string;
}

/** One chat call, retried (same Idempotency-Key) until answered 200 or `giveUpMs` passes; with several gateways, attempt k goes to `url[k % n]`. */
export async function chatCall(
  url: string | readonly string[],
  body: Record<string, unknown>,
  headers: Record<string, string>,
  giveUpMs = 240_000,
): Promise<(CallResult & { content: string }) | null> {
  const t0 = Date.now();
  for (let attempt = 1; Date.now() - t0 < giveUpMs; attempt++) {
    const at = Date.now();
    const gateway = typeof url === 'string' ? url : url[(attempt - 1) % url.length]!;
    try {
      const res = await fetch(`${gateway}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      if (res.status === 200) {
        let content = '';
        if (body.stream) {
          if (!text.includes('[DONE]') || text.includes('"error"')) throw new Error('stream cut');
          for (const m of text.matchAll(/"content":"((?:[^"\\]|\\.)*)"/g)) content += JSON.parse(`"${m[1]}"`);
        } else content = (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content ?? '';
        return {
          turnId: res.headers.get('x-turn-id') ?? '',
          sessionId: res.headers.get('x-session-id') ?? '',
          ms: Date.now() - at,
          at,
          attempts: attempt,
          content,
        };
      }
      if (res.status < 500 && res.status !== 429)
        throw Object.assign(new Error(`HTTP ${res.status}: ${text.slice(0, 200)}`), { fatal: true });
    } catch (err) {
      if ((err as { fatal?: boolean }).fatal) throw err;
    }
    await sleep(Math.min(2000, 250 * attempt));
  }
  return null;
}

/** N calls as conversations; returns what was answered. */
export async function runConversations(o: LoadOptions): Promise<LoadResult> {
  const perSession = o.turnsPerSession ?? 4;
  const sessions = Math.ceil(o.calls / perSession);
  const answered: CallResult[] = [];
  let unanswered = 0;
  let feedback = 0;
  let next = 0;
  const conversation = async (s: number): Promise<void> => {
    const sessionId = `${o.prefix}s${s}`;
    const urls = typeof o.url === 'string' ? [o.url] : o.url;
    /** The gateways in the order call `k` of this conversation tries them. */
    const rotated = (k: number): string[] =>
      o.affinity === 'none' ? urls.map((_, i) => urls[(s + k + i) % urls.length]!) : [urls[s % urls.length]!];
    const user = o.userOf?.(s) ?? `${o.prefix}u${s % 5}`;
    const history: Message[] = [{ role: 'system', content: 'You are a helpful assistant.' }];
    const turns = Math.min(perSession, o.calls - s * perSession);
    for (let t = 0; t < turns; t++) {
      history.push({ role: 'user', content: t === 0 ? `question ${s}: what is ${s} + ${t}?` : REPLIES[(s + t) % REPLIES.length] });
      const stream = (s + t) % 5 === 0;
      const r = await chatCall(
        rotated(t),
        { messages: history, max_tokens: 12, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) },
        {
          'x-session-id': sessionId,
          'x-user-id': user,
          'idempotency-key': `${sessionId}-${t}`,
          ...(t === turns - 1 ? { 'x-session-done': '1' } : {}),
        },
        o.giveUpMs,
      );
      if (!r) {
        unanswered++;
        return;
      }
      answered.push(r);
      history.push({ role: 'assistant', content: r.content });
      if ((s + t) % 6 === 1) {
        const fb = await fetch(`${rotated(t + 1)[0]}/v1/feedback`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user-id': user },
          body: JSON.stringify({ turn_id: r.turnId, rating: (s + t) % 4 === 1 ? 1 : -1 }),
        }).catch(() => null);
        if (fb?.status === 201) feedback++;
        await fb?.text();
      }
      await o.onAnswered?.(answered.length);
    }
  };
  const workers = Array.from({ length: o.concurrency ?? 4 }, async () => {
    while (next < sessions) await conversation(next++);
  });
  await Promise.all(workers);
  return { answered, unanswered, feedback };
}

export interface SlowReadersResult {
  /** Connections opened (first tries and retries). */
  opened: number;
  /** Answered 429 (then retried after Retry-After, as a polite client does). */
  rejected: number;
  /** Streams held without reading. */
  held: number;
}

/**
 * `n` streaming clients asking for log-probs that read nothing for `holdMs` (longer than the
 * gateway's stall timeout): their sockets fill and the gateway must cut them. A 429 is retried
 * after its Retry-After while `holdMs` lasts.
 */
export async function slowReaders(url: string, n: number, holdMs: number, user = 'slow-readers'): Promise<SlowReadersResult> {
  const { hostname, port } = new URL(url);
  const payload = JSON.stringify({
    messages: [{ role: 'user', content: 'tell me a long story' }],
    stream: true,
    logprobs: true,
    top_logprobs: 5,
    max_tokens: 96,
  });
  const request = `POST /v1/chat/completions HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\nx-user-id: ${user}\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`;
  const result: SlowReadersResult = { opened: 0, rejected: 0, held: 0 };
  const deadline = Date.now() + holdMs;
  const one = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const sock = net.connect(Number(port), hostname);
      sock.on('error', () => undefined);
      const head = await new Promise<string>((resolve) => {
        sock.once('connect', () => sock.write(request));
        sock.once('data', (d: Buffer) => resolve(d.toString('latin1')));
        sock.once('close', () => resolve(''));
      });
      result.opened++;
      if (/^HTTP\/1\.1 429/.test(head)) {
        result.rejected++;
        sock.destroy();
        await sleep(Number(/retry-after: (\d+)/i.exec(head)?.[1] ?? 1) * 1000);
        continue;
      }
      result.held++;
      sock.pause();
      await sleep(Math.max(0, deadline - Date.now()));
      sock.destroy();
      return;
    }
  };
  await Promise.all(Array.from({ length: n }, one));
  return result;
}
