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
 * Both go through the official `openai` client (core/openai-client.ts): `/tokenize` as a custom
 * route, the completion with `prompt_logprobs` as an extra body field. It never retries: core/retry.ts does.
 *
 * The response ids must be the engine's own ids (turns from that engine, never re-tokenized).
 * SGLang offers the same through `/generate` with `input_ids`, `return_logprob` and
 * `logprob_start_len`; a different transport can be plugged in as another `Teacher`.
 */
import type { ChatMessage, TopKEntry } from '../../schemas/index.ts';
import type OpenAI from 'openai';
import type { CompletionCreateParamsNonStreaming } from 'openai/resources/completions';
import { ErrorCodes, TurnstreamError, retry } from '../../core/index.ts';
import { jsonOf, openAIClient, openAIFailure } from '../../core/openai-client.ts';
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

/**
 * The completion with vLLM's `prompt_logprobs` (not in OpenAI's API): the package sends the
 * params' fields as they are, so the extra one rides in the body beside the standard ones.
 */
type PromptLogprobsParams = CompletionCreateParamsNonStreaming & { prompt_logprobs: number };

export class UpstreamTeacher implements Teacher {
  readonly id: string;
  private readonly tokenizeUrl: string;
  private readonly completionsUrl: string;
  private readonly client: OpenAI;

  constructor(private readonly o: UpstreamTeacherOptions) {
    this.id = `upstream:${o.model}`;
    this.tokenizeUrl = o.tokenizeUrl ?? `${new URL(o.baseUrl).origin}/tokenize`;
    this.completionsUrl = `${o.baseUrl.replace(/\/+$/, '')}/completions`;
    this.client = openAIClient({ baseURL: o.baseUrl, apiKey: o.apiKey, timeoutMs: o.timeoutMs ?? 60_000, fetch: o.fetch });
  }

  /**
   * One call through the client, retried (core/retry.ts) on retriable failures; each attempt
   * bounded by `timeoutMs`, the whole by the caller's signal.
   */
  private async call<T>(url: string, send: (signal: AbortSignal) => Promise<unknown>, signal?: AbortSignal): Promise<T> {
    return retry(
      async () => {
        const timeout = AbortSignal.timeout(this.o.timeoutMs ?? 60_000);
        const s = signal ? AbortSignal.any([signal, timeout]) : timeout;
        try {
          return jsonOf(await send(s)) as T;
        } catch (err) {
          throw this.callError(err, url, timeout, signal);
        }
      },
      { attempts: (this.o.retries ?? 2) + 1, baseMs: this.o.minBackoffMs ?? 500, maxMs: 10_000, signal },
    );
  }

  /** A failed call as the teacher words it: timed out, aborted, unreachable, an error status, a reply that is not JSON. */
  private callError(err: unknown, url: string, timeout: AbortSignal, signal: AbortSignal | undefined): TurnstreamError {
    const f = openAIFailure(err);
    if (timeout.aborted || f.kind === 'timeout')
      return new TurnstreamError(ErrorCodes.TIMEOUT, `teacher call to ${url} timed out`, { cause: err });
    if (signal?.aborted || f.kind === 'aborted')
      return new TurnstreamError(ErrorCodes.ABORTED, 'teacher call aborted', { cause: err, retriable: false });
    switch (f.kind) {
      case 'unreachable':
        return new TurnstreamError(ErrorCodes.UNAVAILABLE, `teacher unreachable at ${url}: ${f.reason}`, { cause: err });
      case 'status':
        return new TurnstreamError(ErrorCodes.UPSTREAM, `teacher answered HTTP ${f.status} at ${url}: ${f.body.slice(0, 200)}`, {
          retriable: f.status === 408 || f.status === 429 || f.status >= 500,
          cause: err,
        });
      case 'not-json':
        return new TurnstreamError(ErrorCodes.UPSTREAM, `teacher reply is not JSON: ${f.reason.slice(0, 200)}`, { cause: err });
      case 'unreadable':
        return new TurnstreamError(ErrorCodes.UPSTREAM, `teacher reply could not be read at ${url}: ${f.reason}`, { cause: err });
    }
  }

  async score(messages: ChatMessage[], responseTokenIds: number[], opts: TeacherScoreOptions = {}): Promise<TeacherScores> {
    const k = opts.topK ?? 0;
    // Not an OpenAI route: the engine's own, at its origin (an absolute URL, which the client takes as is).
    const tok = await this.call<{ tokens?: unknown }>(
      this.tokenizeUrl,
      (signal) =>
        this.client.post(this.tokenizeUrl, {
          body: { model: this.o.model, messages: messages.map(toWire), add_generation_prompt: true },
          signal,
        }),
      opts.signal,
    );
    if (!Array.isArray(tok.tokens) || !tok.tokens.every(Number.isInteger)) {
      throw new TurnstreamError(ErrorCodes.UPSTREAM, 'teacher /tokenize reply has no integer `tokens`', { retriable: false });
    }
    const promptIds = tok.tokens as number[];
    const params: PromptLogprobsParams = {
      model: this.o.model,
      prompt: [...promptIds, ...responseTokenIds],
      max_tokens: 1,
      temperature: 1,
      prompt_logprobs: k,
    };
    const body = await this.call<{ choices?: Array<{ prompt_logprobs?: PromptLogprobs }> }>(
      this.completionsUrl,
      (signal) => this.client.completions.create(params, { signal }),
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
