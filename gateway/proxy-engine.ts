/**
 * The proxy engine: forwards a chat request to any OpenAI-compatible server (`UPSTREAM_BASE_URL`)
 * with `fetch`, streaming or not, passing `tools` / `tool_choice` and tool calls through
 * (streamed tool-call deltas included). turnstream's own body fields are already stripped.
 * It asks for `logprobs: true` and records what comes back; token ids are recorded only when
 * the upstream returns them (vLLM's `return_token_ids` → `token_ids` / `prompt_token_ids`, or
 * `token_id:<n>` tokens), otherwise the Turn has `tokenized = false`.
 *
 * A client's own `logprobs` / `top_logprobs` reach the upstream as sent, and the upstream's
 * `logprobs` (of the answer, or of each chunk) come back to that client unchanged. When only the
 * gateway asked (for the Turn), the client's answer has `logprobs: null`, as it requested.
 *
 * Every other field reaches the upstream as sent, which honours or refuses it (its 400 is the
 * client's 400), except `n`: each choice is an upstream call of its own (its own Turn), choice i
 * with `seed + i` when a seed is given. A prompt of its own (`/v1/completions`) is refused: the
 * proxy speaks the chat API to its upstream.
 */
import type { ToolCall } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError, invalidInput } from '../core/index.ts';
import type { ChatRequest } from './chat-request.ts';
import type { Delta, Engine, EngineCallOptions, EngineResult, ModelCard } from './engine.ts';
import type { ChoiceLogprobs } from './logprobs.ts';
import { readSseData } from './sse.ts';

export interface ProxyEngineOptions {
  /** e.g. `http://127.0.0.1:8000/v1` (`UPSTREAM_BASE_URL`). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer`. `UPSTREAM_API_KEY` */
  apiKey?: string;
  /** Replaces the request's model. @default the model the client asked for */
  model?: string;
  /** Ask for per-token log-probs. @default true */
  requestLogprobs?: boolean;
  /** Also ask for token ids (vLLM: `return_token_ids`, `return_tokens_as_token_ids`). @default false */
  requestTokenIds?: boolean;
  /** Bound on one upstream call. @default 600000 */
  timeoutMs?: number;
}

interface UpstreamLogprob {
  token?: string;
  logprob?: number;
}

/** A tool call as an upstream sends it: whole in an answer, in pieces (by `index`) in stream deltas. */
interface UpstreamToolCall {
  index?: number;
  id?: string;
  type?: string;
  /** `arguments` is a JSON string; a few servers send the object itself. */
  function?: { name?: string; arguments?: string | Record<string, unknown> };
}

/** `choices[0]` of an answer (`message`) or of a stream chunk (`delta`); vLLM adds the token ids. */
interface UpstreamChoice {
  message?: { content?: string | null; tool_calls?: UpstreamToolCall[] | null };
  delta?: { content?: string | null; tool_calls?: UpstreamToolCall[] | null };
  logprobs?: ChoiceLogprobs | null;
  finish_reason?: string | null;
  token_ids?: number[];
  prompt_token_ids?: number[];
}

/** An upstream's answer, or one chunk of its stream; nothing in it is trusted to be there. */
interface UpstreamReply {
  model?: string;
  choices?: UpstreamChoice[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  prompt_token_ids?: number[];
  error?: { message?: string };
}

interface Acc {
  content: string;
  sawContent: boolean;
  toolCalls: Array<{ id: string; type: string; name: string; arguments: string }>;
  finishReason: string;
  model: string;
  logprobs: number[];
  tokenIdsFromTokens: number[];
  tokenIdsAll: boolean;
  responseIds: number[] | null;
  promptIds: number[] | null;
  promptTokens: number;
  completionTokens: number;
  /** The client asked for `logprobs`: the upstream's go back to it. */
  forwardLogprobs: boolean;
  /** The upstream's `choices[0].logprobs` of a non-streamed answer, as received. */
  clientLogprobs: ChoiceLogprobs | null;
}

const TOKEN_ID = /^token_id:(\d+)$/;

export class ProxyEngine implements Engine {
  readonly kind = 'proxy' as const;
  private readonly base: string;

  constructor(private readonly opts: ProxyEngineOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
  }

  ready(): boolean {
    return true;
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    return h;
  }

  async models(): Promise<ModelCard[]> {
    try {
      const res = await fetch(`${this.base}/models`, { headers: this.headers(), signal: AbortSignal.timeout(5000) });
      if (res.ok) {
        const body = (await res.json()) as { data?: ModelCard[] };
        if (Array.isArray(body.data)) return body.data;
      }
    } catch {
      /* fall through: the configured model */
    }
    return this.opts.model ? [{ id: this.opts.model, object: 'model', created: 0, owned_by: 'upstream' }] : [];
  }

  checkRequest(req: ChatRequest): void {
    if (req.prompt)
      throw invalidInput('/v1/completions is not served by the proxy engine: it speaks the chat API to its upstream.', 'prompt');
  }

  async complete(req: ChatRequest, call: EngineCallOptions): Promise<EngineResult> {
    const body: Record<string, unknown> = { ...req.upstreamBody, stream: req.stream };
    // One upstream call per choice (each its own Turn), with the choice's seed.
    delete body.n;
    if (req.seed !== null) body.seed = req.seed;
    if (this.opts.model) body.model = this.opts.model;
    if (this.opts.requestLogprobs ?? true) body.logprobs = true;
    if (this.opts.requestTokenIds) {
      body.return_token_ids = true;
      body.return_tokens_as_token_ids = true;
    }
    if (req.stream) body.stream_options = { include_usage: true };
    else delete body.stream_options;
    const signal = AbortSignal.any([call.signal, AbortSignal.timeout(this.opts.timeoutMs ?? 600_000)]);
    let res: Response;
    try {
      res = await fetch(`${this.base}/chat/completions`, { method: 'POST', headers: this.headers(), body: JSON.stringify(body), signal });
    } catch (err) {
      if (call.signal.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'request aborted', { cause: err });
      const timedOut = (err as Error).name === 'TimeoutError';
      throw new TurnstreamError(
        timedOut ? ErrorCodes.TIMEOUT : ErrorCodes.UPSTREAM,
        `upstream ${this.base} unreachable: ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (!res.ok) throw await upstreamError(res);
    const acc: Acc = {
      content: '',
      sawContent: false,
      toolCalls: [],
      finishReason: 'stop',
      model: String(body.model ?? ''),
      logprobs: [],
      tokenIdsFromTokens: [],
      tokenIdsAll: true,
      responseIds: null,
      promptIds: null,
      promptTokens: 0,
      completionTokens: 0,
      forwardLogprobs: req.logprobs,
      clientLogprobs: null,
    };
    try {
      if (req.stream && (res.headers.get('content-type') ?? '').includes('text/event-stream') && res.body) {
        for await (const data of readSseData(res.body)) {
          if (data === '[DONE]') break;
          let chunk: UpstreamReply;
          try {
            chunk = JSON.parse(data) as UpstreamReply;
          } catch (err) {
            throw new TurnstreamError(ErrorCodes.UPSTREAM, `upstream sent a stream chunk that is not JSON: ${data.slice(0, 100)}`, {
              cause: err,
            });
          }
          if (chunk.error)
            throw new TurnstreamError(ErrorCodes.UPSTREAM, `upstream error: ${chunk.error.message ?? JSON.stringify(chunk.error)}`);
          this.absorbChunk(acc, chunk, call.onDelta);
        }
      } else {
        const json = (await res.json()) as UpstreamReply;
        this.absorbMessage(acc, json, call.onDelta);
      }
    } catch (err) {
      if (call.signal.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'request aborted', { cause: err });
      if (err instanceof TurnstreamError) throw err;
      throw new TurnstreamError(ErrorCodes.UPSTREAM, `reading the upstream answer failed: ${(err as Error).message}`, { cause: err });
    }
    return this.result(acc, req);
  }

  private absorbLogprobs(acc: Acc, lp: { content?: UpstreamLogprob[] | null } | null | undefined): void {
    for (const e of lp?.content ?? []) {
      if (typeof e.logprob === 'number') acc.logprobs.push(e.logprob);
      const m = TOKEN_ID.exec(e.token ?? '');
      if (m) acc.tokenIdsFromTokens.push(Number(m[1]));
      else acc.tokenIdsAll = false;
    }
  }

  private absorbUsage(acc: Acc, u: UpstreamReply['usage']): void {
    if (!u) return;
    acc.promptTokens = u.prompt_tokens ?? acc.promptTokens;
    acc.completionTokens = u.completion_tokens ?? acc.completionTokens;
  }

  private absorbChunk(acc: Acc, chunk: UpstreamReply, onDelta?: (d: Delta) => void): void {
    if (typeof chunk.model === 'string') acc.model = chunk.model;
    if (Array.isArray(chunk.prompt_token_ids)) acc.promptIds = chunk.prompt_token_ids;
    this.absorbUsage(acc, chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (Array.isArray(choice.prompt_token_ids)) acc.promptIds = choice.prompt_token_ids;
    if (Array.isArray(choice.token_ids)) acc.responseIds = [...(acc.responseIds ?? []), ...choice.token_ids];
    this.absorbLogprobs(acc, choice.logprobs);
    if (choice.finish_reason) acc.finishReason = choice.finish_reason;
    const d = choice.delta ?? {};
    const out: Delta = {};
    if (acc.forwardLogprobs && choice.logprobs) out.logprobs = choice.logprobs;
    if (typeof d.content === 'string' && d.content) {
      acc.content += d.content;
      acc.sawContent = true;
      out.content = d.content;
    } else if (typeof d.content === 'string' && out.logprobs) out.content = d.content;
    if (Array.isArray(d.tool_calls)) {
      out.toolCalls = [];
      for (const tc of d.tool_calls) {
        const index = typeof tc.index === 'number' ? tc.index : acc.toolCalls.length;
        const slot = (acc.toolCalls[index] ??= { id: '', type: 'function', name: '', arguments: '' });
        if (tc.id) slot.id = tc.id;
        if (tc.type) slot.type = tc.type;
        const args = tc.function?.arguments;
        const piece = typeof args === 'string' || args === undefined ? args : JSON.stringify(args);
        if (tc.function?.name) slot.name += tc.function.name;
        if (piece) slot.arguments += piece;
        out.toolCalls.push({
          index,
          ...(tc.id ? { id: tc.id } : {}),
          ...(tc.type ? { type: 'function' as const } : {}),
          function: {
            ...(tc.function?.name ? { name: tc.function.name } : {}),
            ...(piece !== undefined ? { arguments: piece } : {}),
          },
        });
      }
    }
    if (out.content !== undefined || out.toolCalls || out.logprobs) onDelta?.(out);
  }

  private absorbMessage(acc: Acc, json: UpstreamReply, onDelta?: (d: Delta) => void): void {
    if (json.error) throw new TurnstreamError(ErrorCodes.UPSTREAM, `upstream error: ${json.error.message ?? JSON.stringify(json.error)}`);
    const choice = json.choices?.[0];
    if (!choice) throw new TurnstreamError(ErrorCodes.UPSTREAM, 'upstream answer has no choices');
    if (typeof json.model === 'string') acc.model = json.model;
    this.absorbUsage(acc, json.usage);
    if (Array.isArray(json.prompt_token_ids)) acc.promptIds = json.prompt_token_ids;
    if (Array.isArray(choice.prompt_token_ids)) acc.promptIds = choice.prompt_token_ids;
    if (Array.isArray(choice.token_ids)) acc.responseIds = choice.token_ids;
    this.absorbLogprobs(acc, choice.logprobs);
    if (acc.forwardLogprobs) acc.clientLogprobs = choice.logprobs ?? null;
    acc.finishReason = choice.finish_reason ?? 'stop';
    const msg = choice.message ?? {};
    if (typeof msg.content === 'string') {
      acc.content = msg.content;
      acc.sawContent = true;
    }
    for (const tc of msg.tool_calls ?? []) {
      const args = tc.function?.arguments;
      acc.toolCalls.push({
        id: tc.id ?? '',
        type: tc.type ?? 'function',
        name: tc.function?.name ?? '',
        arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
      });
    }
    const delta: Delta = {};
    if (acc.content) delta.content = acc.content;
    if (acc.toolCalls.length) {
      delta.toolCalls = acc.toolCalls.map((t, index) => ({
        index,
        id: t.id,
        type: 'function' as const,
        function: { name: t.name, arguments: t.arguments },
      }));
    }
    if (acc.clientLogprobs) delta.logprobs = acc.clientLogprobs;
    if (delta.content !== undefined || delta.toolCalls || delta.logprobs) onDelta?.(delta);
  }

  private result(acc: Acc, req: ChatRequest): EngineResult {
    const responseIds = acc.responseIds ?? (acc.tokenIdsAll && acc.tokenIdsFromTokens.length > 0 ? acc.tokenIdsFromTokens : null);
    const tokenized = !!responseIds && !!acc.promptIds && responseIds.length === acc.logprobs.length && responseIds.length > 0;
    const toolCalls: ToolCall[] = acc.toolCalls.filter(Boolean);
    return {
      content: acc.sawContent ? acc.content : null,
      toolCalls,
      finishReason: acc.finishReason,
      policyModelId: acc.model || req.model,
      policyVersion: 0,
      promptTokenIds: tokenized ? acc.promptIds! : [],
      responseTokenIds: tokenized ? responseIds! : [],
      responseLogprobs: acc.logprobs,
      logprobs: acc.clientLogprobs,
      exactLogprobs: false,
      tokenized,
      promptTruncatedTokens: 0,
      promptTokens: acc.promptTokens,
      completionTokens: acc.completionTokens || acc.logprobs.length,
      sampling: {
        temperature: req.temperature,
        topP: req.topP,
        maxTokens: req.maxTokens,
        seed: req.seed,
        stop: req.stop,
        presencePenalty: req.presencePenalty ?? null,
        frequencyPenalty: req.frequencyPenalty ?? null,
        responseFormat: req.responseFormat && req.responseFormat.type !== 'text' ? JSON.stringify(req.responseFormat) : null,
      },
    };
  }

  /** The upstream decides which models exist. */
  checkModel(): void {}

  async close(): Promise<void> {}
}

async function upstreamError(res: Response): Promise<TurnstreamError> {
  let message = `${res.status} ${res.statusText}`;
  try {
    const text = await res.text();
    try {
      const j = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
      message = typeof j.error === 'string' ? j.error : (j.error?.message ?? j.message ?? text);
    } catch {
      message = text || message;
    }
  } catch {
    /* keep the status line */
  }
  if (res.status === 400 || res.status === 404 || res.status === 422) {
    return new TurnstreamError(ErrorCodes.INVALID_INPUT, `upstream rejected the request: ${message}`, { retriable: false });
  }
  if (res.status === 429 || res.status === 503)
    return new TurnstreamError(ErrorCodes.UNAVAILABLE, `upstream busy (${res.status}): ${message}`);
  return new TurnstreamError(ErrorCodes.UPSTREAM, `upstream error ${res.status}: ${message}`);
}
