/**
 * The gateway: an OpenAI-compatible API (fastify) in front of the built-in policy or an
 * upstream engine, writing one Turn per call to Kafka through the local outbox.
 *
 * `createGateway(options)` builds everything and returns `{ app, start(), stop() }`, so the
 * CLI, `turnstream up` and tests run it in-process. `start()` opens the outbox (and resumes
 * draining what a previous run left), loads the policy (creating version 0 when the weight
 * store is empty and `builtin.initIfEmpty`), connects to Kafka in the background and
 * listens. `stop()` stops accepting, lets in-flight requests finish, drains the outbox for
 * up to `drainOnStopMs` and leaves the rest on disk for the next run.
 *
 * The routes are fastify plugins on the app of gateway/http-app.ts: health-routes.ts,
 * metrics-route.ts and models-route.ts from the start, chat-completions.ts, completions.ts and
 * feedback-route.ts once the outbox is open. `/healthz` and `/readyz` are open; `/metrics`
 * needs the metrics key when one is set, else an API key when keys are on (open when neither
 * is configured).
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createLogger, ErrorCodes, TurnstreamError, type Logger } from '../core/index.ts';
import { Outbox } from '../streams/index.ts';
import { Admission } from './admission.ts';
import { Authenticator } from './auth.ts';
import { chatCompletions, type ChatRouteDeps } from './chat-completions.ts';
import { completions } from './completions.ts';
import { KafkaLink } from './event-sink.ts';
import { feedbackRoute } from './feedback-route.ts';
import { healthRoutes } from './health-routes.ts';
import { createHttpApp } from './http-app.ts';
import type { LlamaEngine } from './llama-engine.ts';
import { GatewayMetrics } from './metrics.ts';
import { metricsRoute } from './metrics-route.ts';
import { modelsRoute } from './models-route.ts';
import { GATEWAY_DEFAULTS } from './defaults.ts';
import type { GatewayOptions } from './options.ts';
import type { PolicyRegistry } from './policy-registry.ts';
import { createServedEngine, startServedEngine } from './served-engine.ts';
import { SessionIndex } from './session-index.ts';
import { SseBudget } from './sse-writer.ts';
import { TurnCapture, type TurnCaptureOptions } from './turn-capture.ts';

export interface Gateway {
  readonly app: FastifyInstance;
  readonly gatewayId: string;
  readonly metrics: GatewayMetrics;
  /** Available after `start()`. */
  readonly outbox: Outbox;
  /** The built-in engine's policy registry (null otherwise). */
  readonly policies: PolicyRegistry | null;
  /** The llama.cpp engine (null otherwise). */
  readonly llama: LlamaEngine | null;
  /** Admission control: `admission.maxConcurrent` is the number of generations an engine must be able to run at once. */
  readonly admission: Admission;
  /** Listens; resolves with the base URL (e.g. `http://127.0.0.1:30000`). */
  start(): Promise<string>;
  stop(): Promise<void>;
}

export function createGateway(options: GatewayOptions): Gateway {
  const gatewayId = options.gatewayId ?? `gw-${hostname()}-${process.pid}`;
  const logger: Logger = options.logger ?? createLogger('gateway', options.logLevel ?? 'info');
  const metrics = new GatewayMetrics(gatewayId);
  const index = new SessionIndex(options.sessionIndexSize ?? GATEWAY_DEFAULTS.sessionIndexSize);
  const inFlight = new Set<AbortController>();
  // Before the engine: an engine sizes its parallelism (llama.cpp sequences) by `admission.maxConcurrent`.
  const admission = new Admission({
    ...options.admission,
    maxConcurrent: options.admission?.maxConcurrent ?? options.llama?.parallel,
    onChange: (active, queued) => {
      metrics.generationsActive.set(active);
      metrics.generationsQueued.set(queued);
    },
  });
  const sse = new SseBudget(options.streams);
  const outboxDir = options.outboxDir ?? join(options.home, 'outbox');
  const served = createServedEngine(options, admission, metrics, logger);
  const { engine, policies, llama } = served;
  let outbox: Outbox | null = null;
  let capture: TurnCapture | null = null;
  let link: KafkaLink | null = null;

  const auth = new Authenticator(options.apiKeys ?? [], options.serviceKeys ?? []);
  const { metricsKey, bodyDrain, bodyLimitBytes: bodyLimit } = options;
  const app = createHttpApp({ logger, metrics, auth, metricsKey, bodyDrain, bodyLimit });
  void app.register(healthRoutes, {
    engine,
    admission,
    outboxStats: () => outbox?.stats(),
    kafkaConnected: () => link?.connected ?? false,
    policyVersion: () => policies?.version ?? llama?.version ?? null,
    readyMaxDepth: options.outboxReadyMaxDepth,
    stallMs: options.outboxStallMs,
  });
  void app.register(metricsRoute, { metrics, outbox: () => outbox });
  void app.register(modelsRoute, { engine });

  let started = false;
  return {
    app,
    gatewayId,
    metrics,
    get outbox(): Outbox {
      if (!outbox) throw new Error('gateway not started');
      return outbox;
    },
    get policies() {
      return policies;
    },
    get llama() {
      return llama;
    },
    admission,
    async start(): Promise<string> {
      if (started) throw new Error('gateway already started');
      started = true;
      outbox = await Outbox.open({ dir: outboxDir, logger: logger.child({ component: 'outbox' }) });
      metrics.outboxDepth.set(outbox.depth);
      capture = new TurnCapture({ ...captureOptions(options, outboxDir), outbox, index, metrics, logger });
      link = linkKafka(options, outbox, capture, metrics, logger);
      await startServedEngine(served, options, link, logger);
      const chat = chatSettings(options, policies);
      const routeDeps = { ...chat, engine, capture, index, metrics, logger, gatewayId, inFlight, admission, sse };
      void app.register(chatCompletions, routeDeps);
      void app.register(completions, routeDeps);
      void app.register(feedbackRoute, { capture });
      const address = await app.listen({ port: options.port ?? GATEWAY_DEFAULTS.port, host: options.host ?? GATEWAY_DEFAULTS.host });
      logger.info({ address, engine: engine.kind, gatewayId }, 'gateway listening');
      return address;
    },
    async stop(): Promise<void> {
      if (!started) return;
      started = false;
      // Stop accepting; in-flight requests finish (bounded by `stopGraceMs`, then aborted).
      const grace = setTimeout(() => {
        for (const c of inFlight) c.abort(new TurnstreamError(ErrorCodes.ABORTED, 'the gateway is shutting down'));
      }, options.stopGraceMs ?? GATEWAY_DEFAULTS.stopGraceMs);
      await app.close();
      clearTimeout(grace);
      await capture?.settle();
      const left = await outbox?.close(options.drainOnStopMs ?? GATEWAY_DEFAULTS.drainOnStopMs);
      if (left && left.depth > 0) logger.info({ depth: left.depth, dir: outboxDir }, 'outbox not empty at stop; the next start drains it');
      await link?.close();
      await engine.close();
    },
  };
}

/** Kafka behind the outbox (when configured): drains it and, with `shareSessions`, learns the other instances' turns. */
function linkKafka(
  options: GatewayOptions,
  outbox: Outbox,
  capture: TurnCapture,
  metrics: GatewayMetrics,
  logger: Logger,
): KafkaLink | null {
  if (!options.kafka) return null;
  const link = new KafkaLink(options.kafka, logger, (c) => metrics.kafkaConnected.set(c ? 1 : 0));
  outbox.setSender(link.send, link.deadLetter);
  link.warmUp();
  if (options.shareSessions ?? GATEWAY_DEFAULTS.shareSessions)
    link.followTurns((t) => capture.learn(t), options.sessionShareWindowMs ?? GATEWAY_DEFAULTS.sessionShareWindowMs);
  return link;
}

/** What the turn capture takes from the gateway's options. */
function captureOptions(
  options: GatewayOptions,
  outboxDir: string,
): Pick<TurnCaptureOptions, 'boundMs' | 'enabled' | 'maxTurnBytes' | 'oversizedDir'> {
  return {
    boundMs: options.captureBoundMs ?? GATEWAY_DEFAULTS.captureBoundMs,
    enabled: options.capture ?? true,
    maxTurnBytes: options.maxTurnBytes,
    oversizedDir: join(outboxDir, 'oversized'),
  };
}

/** What the chat route takes from the gateway's options, defaults applied. */
function chatSettings(
  options: GatewayOptions,
  policies: PolicyRegistry | null,
): Pick<ChatRouteDeps, 'defaultTurnType' | 'generationTimeoutMs' | 'maxTokensLimit' | 'defaultModel'> {
  return {
    defaultTurnType: options.defaultTurnType ?? GATEWAY_DEFAULTS.defaultTurnType,
    generationTimeoutMs: options.generationTimeoutMs ?? GATEWAY_DEFAULTS.generationTimeoutMs,
    maxTokensLimit: options.maxTokensLimit ?? GATEWAY_DEFAULTS.maxTokensLimit,
    defaultModel: () => policies?.modelId ?? options.llama?.model.name ?? options.upstream?.model ?? 'default',
  };
}
