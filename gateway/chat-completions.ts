/**
 * `POST /v1/chat/completions`, non-streaming and streaming. Streaming sends real SSE deltas as
 * the engine produces them, a final chunk with the finish reason, a usage chunk when
 * `stream_options.include_usage`, then `data: [DONE]`. With `logprobs: true` the answer (or each
 * chunk) carries the engine's `logprobs`, else `logprobs: null`. Every response id is
 * `chatcmpl-<turnId>` and every response carries `X-Turn-Id` (and `X-Session-Id`), so the
 * client can send feedback about the turn. With `n` > 1 the answer has one choice per
 * generation (streamed interleaved, each chunk naming its `index`), each captured as its own Turn
 * (call-runner.ts), and `X-Turn-Ids` lists their turn ids in choice order.
 *
 * Every generation first takes a slot from the gateway's admission control (429 with
 * Retry-After when none comes); a streamed answer is written through an SseWriter, which cuts
 * a client that stops reading.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { SessionSource } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { OPEN_CALLER } from './auth.ts';
import {
  callTurnId,
  captureChoices,
  choicesOf,
  startCall,
  type CallRun,
  completeCall,
  createdOf,
  enterNamedSession,
  recordMetrics,
  runChoices,
  usageOf,
  asCallError,
  type CallSignal,
  type Choice,
  type ChoiceEvents,
  type GenerationDeps,
  type Resolved,
} from './call-runner.ts';
import { parseChatRequest } from './chat-request.ts';
import type { EngineResult } from './engine.ts';
import { toOpenAIError } from './openai-errors.ts';
import { SseWriter } from './sse-writer.ts';
import { resolveTurnContext } from './turn-context.ts';

export type ChatRouteDeps = GenerationDeps;

const ROUTE = '/v1/chat/completions';

function resolve(request: FastifyRequest, deps: ChatRouteDeps): Resolved {
  const requestedAt = Date.now();
  const req = parseChatRequest(request.body, { maxTokensLimit: deps.maxTokensLimit, passThroughContent: deps.engine.kind === 'proxy' });
  deps.engine.checkModel(req.model);
  deps.engine.checkRequest(req);
  const caller = request.caller ?? OPEN_CALLER;
  const ctx = resolveTurnContext(request.headers, req, { defaultTurnType: deps.defaultTurnType, caller });
  enterNamedSession(deps, caller, ctx);
  let sessionId = ctx.sessionId;
  let sessionSource: SessionSource = ctx.sessionSource ?? 'GENERATED';
  if (!sessionId) {
    sessionId = deps.index.infer(req.messages, ctx.userId);
    sessionSource = sessionId ? 'INFERRED' : 'GENERATED';
    sessionId ??= randomUUID();
  }
  const turnId = callTurnId(request, sessionId);
  return { req, ctx, sessionId, sessionSource, turnId, requestedAt, model: req.model || deps.defaultModel() };
}

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

/** The chat completions route as a fastify plugin: `app.register(chatCompletions, deps)`. */
export const chatCompletions: FastifyPluginAsync<ChatRouteDeps> = async (app, deps) => {
  app.post(ROUTE, async (request, reply) => {
    const r = resolve(request, deps);
    const run = await startCall(request, reply, ROUTE, r, choicesOf(r, [null]), deps);
    if (r.req.stream) return streamCompletion(run);

    return {
      id: `chatcmpl-${r.turnId}`,
      object: 'chat.completion',
      ...(await completeCall(run, { delta: () => {} })),
      choices: run.choices.map((c) => ({
        index: c.index,
        message: messageOf(c.result!),
        logprobs: r.req.logprobs ? c.result!.logprobs : null,
        finish_reason: c.result!.finishReason,
      })),
      usage: usageOf(run.choices),
    };
  });
};

/** Opens the SSE response (the reply's headers included) and its writer, which cuts a client that stops reading. */
export function openStream(reply: FastifyReply, r: Resolved, deps: GenerationDeps, call: CallSignal): SseWriter {
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
  return new SseWriter(raw, deps.sse, (reason) => {
    deps.metrics.streamsCut.inc({ reason });
    deps.logger.info({ turnId: r.turnId, reason }, 'streaming client stopped reading; cut');
    call.abort(new TurnstreamError(ErrorCodes.ABORTED, `the client stopped reading the stream (${reason})`));
  });
}

/**
 * Streams a call: its chunks, then each choice's finish, the usage when asked and `[DONE]`; a
 * failure after the headers travels in the stream, as OpenAI does. `events` gets the writer of
 * the route's chunks (`head`, `created`, `model`, then one choice, then `usage: null` when usage
 * is asked for) and says what each choice writes; every Turn is captured once all choices are done.
 */
export async function streamCall(
  { reply, route, r, choices, deps, call, release }: CallRun,
  head: { id: string; object: string },
  events: (write: (choice: Record<string, unknown>) => void) => ChoiceEvents & { start?: (c: Choice) => void },
): Promise<void> {
  const out = openStream(reply, r, deps, call);
  const base = { ...head, created: createdOf(r), model: r.model };
  const usageNull = r.req.includeUsage ? { usage: null } : {};
  const chunks = events((choice) => out.write({ ...base, choices: [choice], ...usageNull }));
  let status = 200;
  try {
    for (const c of choices) chunks.start?.(c);
    let firstAt: number;
    try {
      ({ firstAt } = await runChoices(deps, choices, call, chunks));
    } finally {
      release();
    }
    if (r.req.includeUsage) out.write({ ...base, choices: [], usage: usageOf(choices) });
    await captureChoices(r, choices, deps);
    recordMetrics(deps, route, r, choices, true, firstAt);
    out.write('[DONE]');
  } catch (err) {
    const e = asCallError(err, call.signal);
    const { status: s, body } = toOpenAIError(e);
    status = s;
    // A client that left (or was cut for not reading) is not a server failure.
    if (s >= 500 && e.code !== ErrorCodes.ABORTED) deps.logger.error({ err: e, turnId: r.turnId }, 'streamed generation failed');
    else deps.logger.info({ code: e.code, turnId: r.turnId }, 'streamed generation ended');
    // Headers are gone already: the error travels in the stream, as OpenAI does.
    out.write(body);
    out.write('[DONE]');
  } finally {
    call.dispose();
    deps.metrics.requests.inc({ route, status: String(status) });
    out.end();
  }
}

function streamCompletion(run: CallRun): Promise<void> {
  const { r } = run;
  const head = { id: `chatcmpl-${r.turnId}`, object: 'chat.completion.chunk' };
  return streamCall(run, head, (write) => {
    const chunk = (index: number, delta: Record<string, unknown>, finish: string | null = null, logprobs: unknown = null) =>
      write({ index, delta, logprobs, finish_reason: finish });
    return {
      start: (c) => chunk(c.index, { role: 'assistant', content: '' }),
      delta: (c, d) => {
        const delta: Record<string, unknown> = {};
        if (d.content !== undefined) delta.content = d.content;
        if (d.toolCalls) delta.tool_calls = d.toolCalls;
        chunk(c.index, delta, null, (r.req.logprobs && d.logprobs) || null);
      },
      done: (c) => chunk(c.index, {}, c.result!.finishReason),
    };
  });
}
