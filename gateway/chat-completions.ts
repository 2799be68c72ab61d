/**
 * `POST /v1/chat/completions`, non-streaming and streaming. Streaming sends real SSE deltas as
 * the engine produces them, a final chunk with the finish reason, a usage chunk when
 * `stream_options.include_usage`, then `data: [DONE]`. With `logprobs: true` the answer (or each
 * chunk) carries the engine's `logprobs`, else `logprobs: null`. Every response id is
 * `chatcmpl-<turnId>` and every response carries `X-Turn-Id` (and `X-Session-Id`), so the
 * client can send feedback about the turn.
 *
 * Every generation first takes a slot from the gateway's admission control (429 with
 * Retry-After when none comes); a streamed answer is written through an SseWriter, which cuts
 * a client that stops reading.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { SessionSource, Turn } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError, toTurnstreamError, type Logger } from '../core/index.ts';
import type { Admission } from './admission.ts';
import { OPEN_CALLER } from './auth.ts';
import { parseChatRequest, type ChatRequest } from './chat-request.ts';
import type { Delta, Engine, EngineResult } from './engine.ts';
import type { GatewayMetrics } from './metrics.ts';
import { toOpenAIError } from './openai-errors.ts';
import type { SessionIndex } from './session-index.ts';
import { SseWriter, type SseBudget } from './sse-writer.ts';
import { header, resolveTurnContext, type TurnContext } from './turn-context.ts';
import { turnIdFor, type TurnCapture } from './turn-capture.ts';

export interface ChatRouteDeps {
  engine: Engine;
  capture: TurnCapture;
  index: SessionIndex;
  metrics: GatewayMetrics;
  logger: Logger;
  gatewayId: string;
  defaultTurnType: 'main' | 'side';
  generationTimeoutMs: number;
  maxTokensLimit: number;
  /** The model name reported when a request names none. */
  defaultModel: () => string;
  /** Controllers of the calls in flight; aborted on shutdown. */
  inFlight: Set<AbortController>;
  /** Bounds concurrent generations. */
  admission: Admission;
  /** Bounds what slow streaming clients hold in memory. */
  sse: SseBudget;
}

interface Resolved {
  req: ChatRequest;
  ctx: TurnContext;
  sessionId: string;
  sessionSource: SessionSource;
  turnId: string;
  requestedAt: number;
  model: string;
}

function resolve(request: FastifyRequest, deps: ChatRouteDeps): Resolved {
  const requestedAt = Date.now();
  const req = parseChatRequest(request.body, { maxTokensLimit: deps.maxTokensLimit, passThroughContent: deps.engine.kind === 'proxy' });
  deps.engine.checkModel(req.model);
  const caller = request.caller ?? OPEN_CALLER;
  const ctx = resolveTurnContext(request.headers, req, { defaultTurnType: deps.defaultTurnType, caller });
  // A session named by the client must be the caller's own (inferred ones are, by construction).
  if (ctx.sessionId)
    deps.capture.ownership.enter(caller, ctx.sessionId, ctx.userId, ctx.sessionSource === 'HEADER' ? 'X-Session-Id' : 'session_id');
  let sessionId = ctx.sessionId;
  let sessionSource: SessionSource = ctx.sessionSource ?? 'GENERATED';
  if (!sessionId) {
    sessionId = deps.index.infer(req.messages, ctx.userId);
    sessionSource = sessionId ? 'INFERRED' : 'GENERATED';
    sessionId ??= randomUUID();
  }
  const turnId = turnIdFor(sessionId, header(request.headers, 'idempotency-key') ?? header(request.headers, 'x-request-id'));
  return { req, ctx, sessionId, sessionSource, turnId, requestedAt, model: req.model || deps.defaultModel() };
}

function buildTurn(r: Resolved, result: EngineResult, deps: ChatRouteDeps): Turn {
  const completedAt = Date.now();
  return {
    turnId: r.turnId,
    sessionId: r.sessionId,
    sessionSource: r.sessionSource,
    userId: r.ctx.userId,
    turnType: r.ctx.turnType,
    sessionDone: r.ctx.sessionDone,
    requestedAt: r.requestedAt,
    completedAt,
    model: r.model,
    policyModelId: result.policyModelId,
    policyVersion: result.policyVersion,
    requestMessages: r.req.messages,
    toolsJson: r.req.tools ? JSON.stringify(r.req.tools) : null,
    response: { content: result.content, toolCalls: result.toolCalls, finishReason: result.finishReason },
    promptTokenIds: result.promptTokenIds,
    responseTokenIds: result.responseTokenIds,
    responseLogprobs: result.responseLogprobs,
    tokenized: result.tokenized,
    exactLogprobs: result.exactLogprobs,
    promptTruncatedTokens: result.promptTruncatedTokens,
    promptHeadTokens: result.promptHeadTokens ?? 0,
    sampling: result.sampling,
    usage: {
      promptTokens: result.promptTokens,
      completionTokens: result.completionTokens,
      totalTokens: result.promptTokens + result.completionTokens,
    },
    latencyMs: completedAt - r.requestedAt,
    gatewayId: deps.gatewayId,
    actedBy: r.ctx.actedBy,
    metadata: r.req.metadata,
  };
}

const usageOf = (res: EngineResult) => ({
  prompt_tokens: res.promptTokens,
  completion_tokens: res.completionTokens,
  total_tokens: res.promptTokens + res.completionTokens,
  // OpenAI's field for prompt tokens served from the prefix cache.
  ...(res.cachedPromptTokens !== undefined ? { prompt_tokens_details: { cached_tokens: res.cachedPromptTokens } } : {}),
});

function messageOf(res: EngineResult) {
  return {
    role: 'assistant' as const,
    content: res.content,
    refusal: null,
    ...(res.toolCalls.length
      ? { tool_calls: res.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } })) }
      : {}),
  };
}

/**
 * An abort signal for one call: client gone, generation timeout, or shutdown. Calls register in
 * `deps.inFlight` (rather than listening on a shared shutdown signal, which would pile up
 * listeners) and are aborted from there on stop.
 */
function callSignal(
  reply: FastifyReply,
  deps: ChatRouteDeps,
): { signal: AbortSignal; abort: (reason: TurnstreamError) => void; dispose: () => void } {
  const ctl = new AbortController();
  const onClose = (): void => {
    if (!reply.raw.writableFinished) ctl.abort(new TurnstreamError(ErrorCodes.ABORTED, 'client closed the connection'));
  };
  reply.raw.on('close', onClose);
  const timer = setTimeout(
    () => ctl.abort(new TurnstreamError(ErrorCodes.TIMEOUT, 'the generation took longer than the gateway allows')),
    deps.generationTimeoutMs,
  );
  deps.inFlight.add(ctl);
  return {
    signal: ctl.signal,
    abort: (reason) => ctl.abort(reason),
    dispose: () => {
      clearTimeout(timer);
      deps.inFlight.delete(ctl);
      reply.raw.off('close', onClose);
    },
  };
}

function recordMetrics(deps: ChatRouteDeps, r: Resolved, res: EngineResult, stream: boolean): void {
  deps.metrics.latency.observe({ route: '/v1/chat/completions', stream: String(stream) }, (Date.now() - r.requestedAt) / 1000);
  deps.metrics.tokens.inc({ kind: 'prompt' }, res.promptTokens);
  if (res.cachedPromptTokens) deps.metrics.tokens.inc({ kind: 'prompt_cached' }, res.cachedPromptTokens);
  deps.metrics.tokens.inc({ kind: 'completion' }, res.completionTokens);
}

function asCallError(err: unknown, signal: AbortSignal): TurnstreamError {
  // An abort surfaces as the engine's ABORTED error; report why the call was aborted.
  if (signal.aborted && signal.reason instanceof TurnstreamError && !(err instanceof TurnstreamError && err.code !== ErrorCodes.ABORTED)) {
    return signal.reason;
  }
  return toTurnstreamError(err);
}

/** Who waits in line: the user, else the client's address (a key without a user is one caller per address). */
const callerKey = (request: FastifyRequest, r: Resolved): string => (r.ctx.userId !== null ? `user:${r.ctx.userId}` : `ip:${request.ip}`);

/** The chat completions route as a fastify plugin: `app.register(chatCompletions, deps)`. */
export const chatCompletions: FastifyPluginAsync<ChatRouteDeps> = async (app, deps) => {
  app.post('/v1/chat/completions', async (request, reply) => {
    const r = resolve(request, deps);
    reply.header('x-turn-id', r.turnId).header('x-session-id', r.sessionId);
    const { signal, abort, dispose } = callSignal(reply, deps);
    let slot;
    try {
      slot = await deps.admission.acquire(callerKey(request, r), signal);
    } catch (err) {
      dispose();
      if (err instanceof TurnstreamError && err.code === ErrorCodes.OVERLOADED) deps.metrics.generationsRejected.inc();
      throw asCallError(err, signal);
    }
    if (r.req.stream) return streamCompletion(request, reply, r, deps, { signal, abort, dispose, release: () => slot.release() });

    let res: EngineResult;
    let firstAt = 0;
    try {
      res = await deps.engine.complete(r.req, { signal, onDelta: () => (firstAt ||= Date.now()) });
    } catch (err) {
      throw asCallError(err, signal);
    } finally {
      slot.release();
      dispose();
    }
    if (firstAt) deps.metrics.timeToFirstToken.observe({ engine: deps.engine.kind }, (firstAt - r.requestedAt) / 1000);
    await deps.capture.capture(buildTurn(r, res, deps));
    recordMetrics(deps, r, res, false);
    reply.header('x-policy-version', String(res.policyVersion));
    return {
      id: `chatcmpl-${r.turnId}`,
      object: 'chat.completion',
      created: Math.floor(r.requestedAt / 1000),
      model: r.model,
      system_fingerprint: `${res.policyModelId}-v${res.policyVersion}`,
      choices: [{ index: 0, message: messageOf(res), logprobs: r.req.logprobs ? res.logprobs : null, finish_reason: res.finishReason }],
      usage: usageOf(res),
    };
  });
};

interface Call {
  signal: AbortSignal;
  abort: (reason: TurnstreamError) => void;
  dispose: () => void;
  /** Gives the generation slot back. */
  release: () => void;
}

async function streamCompletion(request: FastifyRequest, reply: FastifyReply, r: Resolved, deps: ChatRouteDeps, call: Call): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  const headers: Record<string, string> = {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  };
  for (const [k, v] of Object.entries(reply.getHeaders())) if (typeof v === 'string') headers[k] = v;
  raw.writeHead(200, headers);
  raw.flushHeaders?.();
  const base = { id: `chatcmpl-${r.turnId}`, object: 'chat.completion.chunk', created: Math.floor(r.requestedAt / 1000), model: r.model };
  const usageNull = r.req.includeUsage ? { usage: null } : {};
  const out = new SseWriter(raw, deps.sse, (reason) => {
    deps.metrics.streamsCut.inc({ reason });
    deps.logger.info({ turnId: r.turnId, reason }, 'streaming client stopped reading; cut');
    call.abort(new TurnstreamError(ErrorCodes.ABORTED, `the client stopped reading the stream (${reason})`));
  });
  const write = (payload: unknown): void => out.write(payload);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, logprobs: unknown = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs, finish_reason: finish }],
    ...usageNull,
  });
  write(chunk({ role: 'assistant', content: '' }));

  const { signal } = call;
  let firstAt = 0;
  let status = 200;
  try {
    let res: EngineResult;
    try {
      res = await deps.engine.complete(r.req, {
        signal,
        onDelta: (d: Delta) => {
          firstAt ||= Date.now();
          const delta: Record<string, unknown> = {};
          if (d.content !== undefined) delta.content = d.content;
          if (d.toolCalls) delta.tool_calls = d.toolCalls;
          write(chunk(delta, null, (r.req.logprobs && d.logprobs) || null));
        },
      });
    } finally {
      call.release();
    }
    if (firstAt) deps.metrics.timeToFirstToken.observe({ engine: deps.engine.kind }, (firstAt - r.requestedAt) / 1000);
    write(chunk({}, res.finishReason));
    if (r.req.includeUsage) write({ ...base, choices: [], usage: usageOf(res) });
    await deps.capture.capture(buildTurn(r, res, deps));
    recordMetrics(deps, r, res, true);
    write('[DONE]');
  } catch (err) {
    const e = asCallError(err, signal);
    const { status: s, body } = toOpenAIError(e);
    status = s;
    // A client that left (or was cut for not reading) is not a server failure.
    if (s >= 500 && e.code !== ErrorCodes.ABORTED) deps.logger.error({ err: e, turnId: r.turnId }, 'streamed generation failed');
    else deps.logger.info({ code: e.code, turnId: r.turnId }, 'streamed generation ended');
    // Headers are gone already: the error travels in the stream, as OpenAI does.
    write(body);
    write('[DONE]');
  } finally {
    call.dispose();
    deps.metrics.requests.inc({ route: '/v1/chat/completions', status: String(status) });
    out.end();
  }
  void request;
}
