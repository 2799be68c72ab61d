/**
 * A teacher served by an upstream engine that can score GIVEN tokens. The API it needs (vLLM's
 * OpenAI-compatible server has both):
 *
 * 1. `POST <origin>/tokenize` `{ model, messages, add_generation_prompt: true }` → `{ tokens }`:
 *    the teacher prompt's ids under the engine's own chat template;
 * 2. `POST <baseUrl>/completions` `{ model, prompt: [...promptIds, ...responseIds], max_tokens: 1,
 *    prompt_logprobs: k }` → `choices[0].prompt_logprobs`: per prompt position, null (first) or
 *    `{ "<token id>": { logprob, rank } }` holding the actual token and the top k.
 *
 * The response ids must be the engine's own ids (turns from that engine, never re-tokenized).
 * SGLang offers the same through `/generate` with `input_ids`, `return_logprob` and
 * `logprob_start_len`; a different transport can be plugged in as another `Teacher`.
 */
import type { ChatMessage, TopKEntry } from '../../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/errors.ts';
import { retry } from '../../core/retry.ts';
import type { Teacher, TeacherScoreOptions, TeacherScores } from './teacher.ts';

export interface UpstreamTeacherOptions {
  /** OpenAI-compatible base URL, e.g. `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  /** Model name of the frozen teacher. */
  model: string;
  /** Bearer token. @default undefined */
  apiKey?: string;
  /** Tokenize endpoint. @default `<origin of baseUrl>/tokenize` */
  tokenizeUrl?: string;
  /** Bound on one attempt, in ms. @default 60_000 */
  timeoutMs?: number;
  /** Retries on retriable failures (network, timeout, 429, 5xx). @default 2 */
  retries?: number;
  /** First backoff delay in ms. @default 500 */
  minBackoffMs?: number;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

type PromptLogprobs = Array<Record<string, { logprob: number; rank?: number | null }> | null>;

/** OpenAI wire format of an event message. */
const toWire = (m: ChatMessage): Record<string, unknown> => ({
  role: m.role,
  content: m.content ?? '',
  ...(m.name ? { name: m.name } : {}),
  ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
  ...(m.toolCalls.length
    ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: c.type || 'function', function: { name: c.name, arguments: c.arguments } })) }
    : {}),
});

export class UpstreamTeacher implements Teacher {
  readonly id: string;
  private readonly tokenizeUrl: string;
  private readonly f: typeof fetch;

  constructor(private readonly o: UpstreamTeacherOptions) {
    this.id = `upstream:${o.model}`;
    this.tokenizeUrl = o.tokenizeUrl ?? `${new URL(o.baseUrl).origin}/tokenize`;
    this.f = o.fetch ?? globalThis.fetch;
  }

  private async post<T>(url: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return retry(
      async () => {
        const timeout = AbortSignal.timeout(this.o.timeoutMs ?? 60_000);
        const s = signal ? AbortSignal.any([signal, timeout]) : timeout;
        let res: Response;
        try {
          res = await this.f(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}) },
            body: JSON.stringify(body),
            signal: s,
          });
        } catch (err) {
          if (timeout.aborted) throw new TurnstreamError(ErrorCodes.TIMEOUT, `teacher call to ${url} timed out`, { cause: err });
          if (signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'teacher call aborted', { cause: err, retriable: false });
          throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `teacher unreachable at ${url}: ${(err as Error).message}`, { cause: err });
        }
        const text = await res.text();
        if (!res.ok) {
          throw new TurnstreamError(ErrorCodes.UPSTREAM, `teacher answered HTTP ${res.status} at ${url}: ${text.slice(0, 200)}`, {
            retriable: res.status === 408 || res.status === 429 || res.status >= 500,
          });
        }
        try {
          return JSON.parse(text) as T;
        } catch (err) {
          throw new TurnstreamError(ErrorCodes.UPSTREAM, `teacher reply is not JSON: ${text.slice(0, 200)}`, { cause: err });
        }
      },
      { attempts: (this.o.retries ?? 2) + 1, baseMs: this.o.minBackoffMs ?? 500, maxMs: 10_000, signal },
    );
  }

  async score(messages: ChatMessage[], responseTokenIds: number[], opts: TeacherScoreOptions = {}): Promise<TeacherScores> {
    const k = opts.topK ?? 0;
    const tok = await this.post<{ tokens?: unknown }>(
      this.tokenizeUrl,
      { model: this.o.model, messages: messages.map(toWire), add_generation_prompt: true },
      opts.signal,
    );
    if (!Array.isArray(tok.tokens) || !tok.tokens.every(Number.isInteger)) {
      throw new TurnstreamError(ErrorCodes.UPSTREAM, 'teacher /tokenize reply has no integer `tokens`', { retriable: false });
    }
    const promptIds = tok.tokens as number[];
    const body = await this.post<{ choices?: Array<{ prompt_logprobs?: PromptLogprobs }> }>(
      `${this.o.baseUrl.replace(/\/+$/, '')}/completions`,
      { model: this.o.model, prompt: [...promptIds, ...responseTokenIds], max_tokens: 1, temperature: 1, prompt_logprobs: k },
      opts.signal,
    );
    const plp = body.choices?.[0]?.prompt_logprobs;
    if (!Array.isArray(plp) || plp.length < promptIds.length + responseTokenIds.length) {
      throw new TurnstreamError(
        ErrorCodes.UPSTREAM,
        'teacher /completions reply lacks prompt_logprobs for every token (is prompt_logprobs supported?)',
        { retriable: false },
      );
    }
    const logprobs: number[] = [];
    const topK: TopKEntry[] = [];
    responseTokenIds.forEach((id, i) => {
      const pos = plp[promptIds.length + i];
      const own = pos?.[String(id)];
      if (!pos || !own || !Number.isFinite(own.logprob)) {
        throw new TurnstreamError(ErrorCodes.UPSTREAM, `teacher gave no log-prob for response token ${i} (id ${id})`, { retriable: false });
      }
      logprobs.push(own.logprob);
      if (k > 0) {
        const entries = Object.entries(pos)
          .map(([tid, v]) => ({ id: Number(tid), logprob: v.logprob, rank: v.rank ?? Infinity }))
          .sort((a, b) => b.logprob - a.logprob)
          .slice(0, k);
        topK.push({ ids: entries.map((e) => e.id), logprobs: entries.map((e) => e.logprob) });
      }
    });
    return k > 0 ? { logprobs, topK } : { logprobs };
  }
}

export const createUpstreamTeacher = (options: UpstreamTeacherOptions): UpstreamTeacher => new UpstreamTeacher(options);
