/**
 * What the generation routes (`/v1/chat/completions`, `/v1/completions`) share: a call's abort
 * signal (client gone, timeout, shutdown), its admission slot, its choices run at once on the
 * engine, one Turn per choice, and the metrics.
 *
 * A call asks for `n` choices of each of its prompts (chat: one, the messages). Each choice is
 * one engine generation (llama.cpp: a sequence of its own, run in parallel with the others), and
 * one Turn with its own token ids and log-probs: choice i of prompt p is `choiceIndex` p·n + i,
 * drawn with `seed + i` when the request gives a seed (so the same seed gives the same choices).
 * Choice 0 keeps the call's turn id and session; choice k > 0 has a turn id derived from the
 * call's (deterministic, so an idempotent retry keeps them all) and a session of its own
 * (`<session>~k`): sibling answers to one request are alternatives, not turns that follow each
 * other, and the session assembler pairs a session's turns in order. A client continuing from
 * choice k without a session header lands in choice k's session by inference.
 *
 * The call takes one admission slot whatever `n`; its choices wait for engine sequences like any
 * generation. The first choice to fail aborts the others and fails the call: no Turn is captured
 * for a call that did not complete.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { deterministicId, type SessionSource, type Turn } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError, toTurnstreamError, type Logger } from '../core/index.ts';
import type { Admission } from './admission.ts';
import type { Caller } from './auth.ts';
import type { ChatRequest, RawPrompt } from './chat-request.ts';
import type { Delta, Engine, EngineResult, PromptEcho } from './engine.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { SessionIndex } from './session-index.ts';
import type { SseBudget } from './sse-writer.ts';
import type { TurnContext } from './turn-context.ts';
import { turnIdFor, type TurnCapture } from './turn-capture.ts';
import { header } from './request-values.ts';

export interface GenerationDeps {
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

/** A call once validated: its request, the turn's context, and where its Turns go. */
export interface Resolved {
  req: ChatRequest;
  ctx: TurnContext;
  sessionId: string;
  sessionSource: SessionSource;
  turnId: string;
  requestedAt: number;
  model: string;
}

/** One choice of a call: what it asks the engine, its Turn's ids, and the engine's answer once done. */
export interface Choice {
  index: number;
  req: ChatRequest;
  turnId: string;
  sessionId: string;
  sessionSource: SessionSource;
  /** The first choice of its prompt (its prompt tokens count once in `usage`). */
  firstOfPrompt: boolean;
  result?: EngineResult;
  /** The prompt as the engine read it (a prompt of its own only). */
  prompt?: PromptEcho;
  /** When the choice's first and latest deltas came (epoch ms): its inter-token latency. */
  firstDeltaAt?: number;
  lastDeltaAt?: number;
}

/** What a route does with a call's choices as they run. */
export interface ChoiceEvents {
  /** A choice's prompt as the engine read it (a prompt of its own only), before its first delta. */
  prompt?: (c: Choice, p: PromptEcho) => void;
  delta: (c: Choice, d: Delta) => void;
  /** A choice finished (`c.result` is set). */
  done?: (c: Choice) => void;
}

/** The turn id of choice `index` of the call whose turn id is `turnId`. */
export const choiceTurnId = (turnId: string, index: number): string =>
  index === 0 ? turnId : deterministicId('turn-choice', turnId, index);

/** The session of choice `index` of a call in `sessionId`. */
export const choiceSessionId = (sessionId: string, index: number): string => (index === 0 ? sessionId : `${sessionId}~${index}`);

/** The call's choices: `n` for each prompt (`[null]`: the chat's messages), choice i of each seeded `seed + i`. */
export function choicesOf(r: Resolved, prompts: ReadonlyArray<RawPrompt | null>): Choice[] {
  const n = r.req.n ?? 1;
  const out: Choice[] = [];
  prompts.forEach((prompt, p) => {
    for (let i = 0; i < n; i++) {
      const index = p * n + i;
      out.push({
        index,
        req: { ...r.req, ...(prompt ? { prompt } : {}), seed: r.req.seed === null ? null : r.req.seed + i },
        turnId: choiceTurnId(r.turnId, index),
        sessionId: choiceSessionId(r.sessionId, index),
        sessionSource: index === 0 ? r.sessionSource : 'GENERATED',
        firstOfPrompt: i === 0,
      });
    }
  });
  return out;
}

/** A call's signal and how to abort it; `dispose` when the call ends. */
export interface CallSignal {
  signal: AbortSignal;
  abort: (reason: TurnstreamError) => void;
  dispose: () => void;
}

/**
 * An abort signal for one call: client gone, generation timeout, or shutdown. Calls register in
 * `deps.inFlight` (rather than listening on a shared shutdown signal, which would pile up
 * listeners) and are aborted from there on stop.
 */
export function callSignal(reply: FastifyReply, deps: GenerationDeps): CallSignal {
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

export function asCallError(err: unknown, signal: AbortSignal): TurnstreamError {
  // An abort surfaces as the engine's ABORTED error; report why the call was aborted.
  if (signal.aborted && signal.reason instanceof TurnstreamError && !(err instanceof TurnstreamError && err.code !== ErrorCodes.ABORTED)) {
    return signal.reason;
  }
  return toTurnstreamError(err);
}

/** Who waits in line: the user, else the client's address (a key without a user is one caller per address). */
const callerKey = (request: FastifyRequest, r: Resolved): string => (r.ctx.userId !== null ? `user:${r.ctx.userId}` : `ip:${request.ip}`);

/** Takes the call's generation slot (429 when none comes); the call's signal is disposed on failure. */
export async function admit(
  request: FastifyRequest,
  r: Resolved,
  deps: GenerationDeps,
  call: CallSignal,
): Promise<{ release: () => void }> {
  try {
    return await deps.admission.acquire(callerKey(request, r), call.signal);
  } catch (err) {
    call.dispose();
    if (err instanceof TurnstreamError && err.code === ErrorCodes.OVERLOADED) deps.metrics.generationsRejected.inc();
    throw asCallError(err, call.signal);
  }
}

/**
 * Runs every choice at once, telling `on` of each prompt, delta and finished choice as they come;
 * the first failure aborts the others and is thrown (as the call's error). Returns when all are
 * done, with `firstAt` the time of the first delta (0 if none).
 */
export async function runChoices(
  deps: GenerationDeps,
  choices: Choice[],
  call: CallSignal,
  on: ChoiceEvents,
): Promise<{ firstAt: number }> {
  let firstAt = 0;
  let failure: TurnstreamError | null = null;
  await Promise.all(
    choices.map(async (c) => {
      try {
        c.result = await deps.engine.complete(c.req, {
          signal: call.signal,
          onDelta: (d) => {
            const now = Date.now();
            firstAt ||= now;
            c.firstDeltaAt ??= now;
            c.lastDeltaAt = now;
            on.delta(c, d);
          },
          onPrompt: (p) => {
            c.prompt = p;
            on.prompt?.(c, p);
          },
        });
        if (!failure) on.done?.(c);
      } catch (err) {
        const e = asCallError(err, call.signal);
        if (!failure) {
          failure = e;
          if (!call.signal.aborted) call.abort(e);
        }
      }
    }),
  );
  if (failure) throw failure;
  return { firstAt };
}

/** A call under way: its route, request, choices, abort signal and admission slot. */
export interface CallRun {
  reply: FastifyReply;
  route: string;
  r: Resolved;
  choices: Choice[];
  deps: GenerationDeps;
  call: CallSignal;
  /** Gives the admission slot back. */
  release: () => void;
}

/** Starts a call: its headers, its abort signal, then its admission slot (429 when none comes). */
export async function startCall(
  request: FastifyRequest,
  reply: FastifyReply,
  route: string,
  r: Resolved,
  choices: Choice[],
  deps: GenerationDeps,
): Promise<CallRun> {
  callHeaders(reply, r, choices);
  const call = callSignal(reply, deps);
  const slot = await admit(request, r, deps, call);
  return { reply, route, r, choices, deps, call, release: slot.release };
}

/**
 * Runs a call that does not stream: its choices, then (the slot released) their Turns and metrics;
 * sets `x-policy-version` and returns the fields that open both routes' answers after `id` and `object`.
 */
export async function completeCall(
  { reply, route, r, choices, deps, call, release }: CallRun,
  on: ChoiceEvents,
): Promise<{ created: number; model: string; system_fingerprint: string }> {
  let firstAt: number;
  try {
    ({ firstAt } = await runChoices(deps, choices, call, on));
  } finally {
    release();
    call.dispose();
  }
  await captureChoices(r, choices, deps);
  recordMetrics(deps, route, r, choices, false, firstAt);
  const first = choices[0].result!;
  reply.header('x-policy-version', String(first.policyVersion));
  return { created: createdOf(r), model: r.model, system_fingerprint: `${first.policyModelId}-v${first.policyVersion}` };
}

/** OpenAI's `created` of a call: its request time in whole seconds. */
export const createdOf = (r: Resolved): number => Math.floor(r.requestedAt / 1000);

/**
 * The turn id of a call in `sessionId`: derived from the client's `Idempotency-Key` (or
 * `X-Request-Id`) when it sends one, so a retry keeps it.
 */
export const callTurnId = (request: FastifyRequest, sessionId: string): string =>
  turnIdFor(sessionId, header(request.headers, 'idempotency-key') ?? header(request.headers, 'x-request-id'));

/** A session named by the client must be the caller's own (inferred ones are, by construction). */
export function enterNamedSession(deps: GenerationDeps, caller: Caller, ctx: TurnContext): void {
  if (ctx.sessionId)
    deps.capture.ownership.enter(caller, ctx.sessionId, ctx.userId, ctx.sessionSource === 'HEADER' ? 'X-Session-Id' : 'session_id');
}

/** The Turn of a finished choice. */
export function buildTurn(r: Resolved, c: Choice, deps: GenerationDeps): Turn {
  const result = c.result!;
  const completedAt = Date.now();
  const raw = c.req.prompt ?? null;
  const requestMessages = raw
    ? [{ role: 'user', content: result.promptText ?? ('text' in raw ? raw.text : null), name: null, toolCallId: null, toolCalls: [] }]
    : r.req.messages;
  return {
    turnId: c.turnId,
    sessionId: c.sessionId,
    sessionSource: c.sessionSource,
    userId: r.ctx.userId,
    turnType: r.ctx.turnType,
    sessionDone: r.ctx.sessionDone,
    requestedAt: r.requestedAt,
    completedAt,
    model: r.model,
    policyModelId: result.policyModelId,
    policyVersion: result.policyVersion,
    requestMessages,
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
    choiceIndex: c.index,
    rawPrompt: raw !== null,
  };
}

/** Captures every choice's Turn (each append bounded by the capture's wait). */
export async function captureChoices(r: Resolved, choices: Choice[], deps: GenerationDeps): Promise<void> {
  await Promise.all(choices.map((c) => deps.capture.capture(buildTurn(r, c, deps))));
}

/** OpenAI's `usage` of a call: each prompt counted once, every choice's tokens. */
export function usageOf(choices: Choice[]): Record<string, unknown> {
  let prompt = 0;
  let completion = 0;
  let cached: number | undefined;
  for (const c of choices) {
    const res = c.result!;
    completion += res.completionTokens;
    if (!c.firstOfPrompt) continue;
    prompt += res.promptTokens;
    if (res.cachedPromptTokens !== undefined) cached = (cached ?? 0) + res.cachedPromptTokens;
  }
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    // OpenAI's field for prompt tokens served from the prefix cache.
    ...(cached !== undefined ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
}

/** The call's headers: its turn id (choice 0), every choice's when there are several, its session. */
export function callHeaders(reply: FastifyReply, r: Resolved, choices: Choice[]): void {
  reply.header('x-turn-id', r.turnId).header('x-session-id', r.sessionId);
  if (choices.length > 1) reply.header('x-turn-ids', choices.map((c) => c.turnId).join(','));
}

export function recordMetrics(deps: GenerationDeps, route: string, r: Resolved, choices: Choice[], stream: boolean, firstAt: number): void {
  if (firstAt) deps.metrics.timeToFirstToken.observe({ engine: deps.engine.kind }, (firstAt - r.requestedAt) / 1000);
  deps.metrics.latency.observe({ route, stream: String(stream) }, (Date.now() - r.requestedAt) / 1000);
  for (const c of choices) {
    const res = c.result!;
    if (c.firstOfPrompt) deps.metrics.tokens.inc({ kind: 'prompt' }, res.promptTokens);
    if (c.firstOfPrompt && res.cachedPromptTokens) deps.metrics.tokens.inc({ kind: 'prompt_cached' }, res.cachedPromptTokens);
    deps.metrics.tokens.inc({ kind: 'completion' }, res.completionTokens);
    const itl = interTokenSeconds(c);
    if (itl !== null) deps.metrics.interTokenLatency.observe({ engine: deps.engine.kind }, itl);
  }
}

/**
 * A choice's mean time between generated tokens after its first: (latest delta − first delta) /
 * (completion tokens − 1); null under two tokens or with no deltas timed. Taken per choice, not
 * per delta: an engine may hand several tokens in one delta (a proxy's upstream chunks, the text
 * llama.cpp holds back until a UTF-8 character or a stop string is whole).
 */
export function interTokenSeconds(c: Choice): number | null {
  const tokens = c.result?.completionTokens ?? 0;
  if (tokens < 2 || c.firstDeltaAt === undefined || c.lastDeltaAt === undefined) return null;
  return (c.lastDeltaAt - c.firstDeltaAt) / 1000 / (tokens - 1);
}
