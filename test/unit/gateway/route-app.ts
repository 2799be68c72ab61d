/**
 * What a gateway route plugin is tested in with `app.inject()` (no socket): the gateway's own
 * app (gateway/http-app.ts: JSON parsing, OpenAI error shape, keys), a scripted engine (pure
 * logic: a fixed answer, delta by delta) and a turn capture on a real outbox in a temp folder.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { createLogger, ErrorCodes, TurnstreamError } from '../../../core/index.ts';
import { Outbox } from '../../../streams/index.ts';
import { Admission } from '../../../gateway/admission.ts';
import { Authenticator } from '../../../gateway/auth.ts';
import type { GenerationDeps } from '../../../gateway/call-runner.ts';
import type { ChatRequest } from '../../../gateway/chat-request.ts';
import type { Engine, EngineCallOptions, EngineResult, ModelCard } from '../../../gateway/engine.ts';
import { createHttpApp } from '../../../gateway/http-app.ts';
import { GatewayMetrics } from '../../../gateway/metrics.ts';
import { SessionIndex } from '../../../gateway/session-index.ts';
import { SseBudget } from '../../../gateway/sse-writer.ts';
import { TurnCapture } from '../../../gateway/turn-capture.ts';

export const logger = createLogger('gateway-test', 'silent');

export interface TestAppOptions {
  apiKeys?: string[];
  serviceKeys?: string[];
  metricsKey?: string;
}

export function testApp(o: TestAppOptions = {}): { app: FastifyInstance; metrics: GatewayMetrics } {
  const metrics = new GatewayMetrics('gw-test');
  const auth = new Authenticator(o.apiKeys ?? [], o.serviceKeys ?? []);
  return { app: createHttpApp({ logger, metrics, auth, metricsKey: o.metricsKey }), metrics };
}

export interface ScriptedEngine extends Engine {
  /** The requests it was asked to complete. */
  readonly requests: ChatRequest[];
}

/**
 * An engine that answers every request with `answer`, one delta per piece (one token each, with
 * its log-prob −0.5 when the request asks), or fails with `fail` after the pieces; it starts once
 * `gate` resolves, and serves only `model`. A prompt of its own is read back as is (token ids
 * joined by spaces).
 */
export function scriptedEngine(
  o: {
    answer?: string[];
    fail?: unknown;
    ready?: boolean;
    model?: string;
    gate?: Promise<unknown>;
    /** Refuses a request as an engine's `checkRequest` does (throws). */
    refuse?: (req: ChatRequest) => void;
  } = {},
): ScriptedEngine {
  const answer = o.answer ?? ['Hel', 'lo'];
  const model = o.model ?? 'scripted';
  const requests: ChatRequest[] = [];
  return {
    kind: 'builtin',
    requests,
    ready: () => o.ready ?? true,
    models: async (): Promise<ModelCard[]> => [{ id: model, object: 'model', created: 1_700_000_000, owned_by: 'turnstream' }],
    checkModel(name: string): void {
      if (name && name !== model)
        throw new TurnstreamError(ErrorCodes.NOT_FOUND, `The model \`${name}\` does not exist`, { param: 'model' });
    },
    checkRequest(req: ChatRequest): void {
      o.refuse?.(req);
    },
    async complete(req: ChatRequest, call: EngineCallOptions): Promise<EngineResult> {
      requests.push(req);
      await o.gate;
      const prompt = req.prompt;
      if (prompt) call.onPrompt?.({ text: 'text' in prompt ? prompt.text : prompt.tokens.join(' '), logprobs: null });
      const entry = (token: string) => ({
        token,
        logprob: -0.5,
        bytes: [...Buffer.from(token)],
        top_logprobs: [{ token, logprob: -0.5, bytes: [...Buffer.from(token)] }],
      });
      for (const content of answer) {
        if (call.signal.aborted) throw call.signal.reason;
        call.onDelta?.(req.logprobs ? { content, logprobs: { content: [entry(content)], refusal: null } } : { content });
      }
      if (o.fail) throw o.fail;
      return {
        content: answer.join(''),
        toolCalls: [],
        finishReason: 'stop',
        policyModelId: model,
        policyVersion: 3,
        promptTokenIds: [1, 2, 3],
        responseTokenIds: answer.map((_, i) => 10 + i),
        responseLogprobs: answer.map(() => -0.5),
        logprobs: null,
        tokenized: true,
        exactLogprobs: true,
        promptTruncatedTokens: 0,
        promptTokens: 3,
        completionTokens: answer.length,
        sampling: { temperature: 1, topP: 1, maxTokens: 16, seed: req.seed ?? 7, stop: [] },
        ...(prompt ? { promptText: 'text' in prompt ? prompt.text : prompt.tokens.join(' ') } : {}),
      };
    },
    close: async () => {},
  };
}

/** A turn capture on a real outbox in a temp folder (no Kafka: records stay there). */
export async function testCapture(
  metrics: GatewayMetrics,
  o: { enabled?: boolean } = {},
): Promise<{ capture: TurnCapture; outbox: Outbox; index: SessionIndex; close: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'ts-gw-route-'));
  const outbox = await Outbox.open({ dir, logger });
  const index = new SessionIndex();
  const capture = new TurnCapture({ outbox, index, metrics, logger, enabled: o.enabled });
  const close = async (): Promise<void> => {
    await outbox.close(0);
    await rm(dir, { recursive: true, force: true });
  };
  return { capture, outbox, index, close };
}

/**
 * The gateway's app (`o` its keys) with the generation `routes` registered on `engine`, turns
 * captured by testCapture: the gateway's deps with small limits (1,000 tokens, 10 s), a fresh
 * admission unless `o` gives one. `close` stops the app and removes the capture's folder.
 */
export async function routeApp(
  routes: Array<FastifyPluginAsync<GenerationDeps>>,
  engine: Engine,
  o: TestAppOptions & { admission?: Admission } = {},
): Promise<{ app: FastifyInstance; outbox: Outbox; metrics: GatewayMetrics; close: () => Promise<void> }> {
  const { app, metrics } = testApp(o);
  const { capture, outbox, index, close } = await testCapture(metrics);
  const deps: GenerationDeps = {
    engine,
    capture,
    index,
    metrics,
    logger,
    gatewayId: 'gw-test',
    defaultTurnType: 'main',
    generationTimeoutMs: 10_000,
    maxTokensLimit: 1000,
    defaultModel: () => 'scripted',
    inFlight: new Set<AbortController>(),
    admission: o.admission ?? new Admission(),
    sse: new SseBudget(),
  };
  for (const route of routes) await app.register(route, deps);
  return {
    app,
    outbox,
    metrics,
    close: async () => {
      await app.close();
      await close();
    },
  };
}

/** Asserts OpenAI's error shape and returns the error. */
export function openAIError(body: string): { message: string; type: string; param: string | null; code: string | null } {
  const parsed = JSON.parse(body) as { error?: Record<string, unknown> };
  const e = parsed.error;
  if (!e || typeof e.message !== 'string' || typeof e.type !== 'string' || !('param' in e) || !('code' in e))
    throw new Error(`not an OpenAI error: ${body}`);
  return e as { message: string; type: string; param: string | null; code: string | null };
}

/** Asserts that the body is OpenAI's error with exactly this message, type, code and param (null unless given). */
export function assertOpenAIError(body: string, expected: { message: string; type: string; code: string; param?: string }): void {
  assert.deepEqual(openAIError(body), { param: null, ...expected });
}
