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
 * `/healthz` and `/readyz` are open; `/metrics` needs the metrics key when one is set, else an
 * API key when keys are on (open when neither is configured). `/readyz` is not ready while the
 * engine is not loaded, the outbox cannot be written, holds more than `outboxReadyMaxDepth`
 * records, or has drained nothing for `outboxStallMs` while holding some (Kafka away that long):
 * a load balancer then prefers an instance that can deliver what it captures. The gateway keeps
 * answering meanwhile; the outbox keeps every turn.
 */
import { isUtf8 } from 'node:buffer';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { KeySet, presentedKey } from '../streams/api-keys.ts';
import { ErrorCodes, TurnstreamError } from '../core/errors.ts';
import { createLogger, type Logger } from '../core/logger.ts';
import { Outbox } from '../streams/outbox.ts';
import { initCheckpoint, loadPolicy, selectBackend, WeightStore } from '../policy/index.ts';
import { Admission } from './admission.ts';
import { Authenticator, type Caller } from './auth.ts';
import { bodyStillArriving, drainRejectedBody } from './body-drain.ts';
import { BuiltinEngine } from './builtin-engine.ts';
import { registerChatCompletions } from './chat-completions.ts';
import type { Engine } from './engine.ts';
import { KafkaLink } from './event-sink.ts';
import { LlamaEngine } from './llama-engine.ts';
import { registerFeedback } from './feedback-route.ts';
import { GatewayMetrics } from './metrics.ts';
import { toOpenAIError } from './openai-errors.ts';
import type { GatewayOptions } from './options.ts';
import { PolicyRegistry } from './policy-registry.ts';
import { ProxyEngine } from './proxy-engine.ts';
import { SessionIndex } from './session-index.ts';
import { SseBudget } from './sse-writer.ts';
import { TurnCapture } from './turn-capture.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling (set for every route but the open ones). */
    caller?: Caller;
  }
}

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

const OPEN_ROUTES = new Set(['/healthz', '/readyz']);

export function createGateway(options: GatewayOptions): Gateway {
  const gatewayId = options.gatewayId ?? `gw-${hostname()}-${process.pid}`;
  const logger: Logger = options.logger ?? createLogger('gateway', options.logLevel ?? 'info');
  const metrics = new GatewayMetrics(gatewayId);
  const index = new SessionIndex(options.sessionIndexSize ?? 10_000);
  const auth = new Authenticator(options.apiKeys ?? [], options.serviceKeys ?? []);
  const metricsKey = options.metricsKey ? new KeySet([[options.metricsKey, true]]) : null;
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

  let outbox: Outbox | null = null;
  let capture: TurnCapture | null = null;
  let link: KafkaLink | null = null;
  let policies: PolicyRegistry | null = null;
  let llama: LlamaEngine | null = null;
  let engine: Engine;
  const onSwap = (modelId: string, version: number): void => {
    metrics.policyVersion.reset();
    metrics.policyVersion.set({ model_id: modelId }, version);
    metrics.policySwaps.inc();
  };

  if (options.upstream) {
    engine = new ProxyEngine(options.upstream);
  } else if (options.llama) {
    const modelId = options.llama.model.modelId;
    // One llama.cpp sequence per admitted generation.
    engine = llama = new LlamaEngine({ ...options.llama, parallel: admission.maxConcurrent, logger, onSwap: (v) => onSwap(modelId, v) });
  } else {
    if (!options.builtin) throw new Error('createGateway: give `builtin` (weights) or `upstream`');
    const b = options.builtin;
    policies = new PolicyRegistry({
      weightsDir: b.weightsDir,
      modelId: b.modelId ?? 'turnstream-tiny',
      load: b.load ?? loadPolicy,
      logger,
      onSwap: (p) => onSwap(p.modelId, p.version),
    });
    engine = new BuiltinEngine({ registry: policies, defaultMaxTokens: b.defaultMaxTokens, maxPromptTokens: b.maxPromptTokens });
  }

  const bodyLimit = options.bodyLimitBytes ?? 4 * 1024 * 1024;
  const app = Fastify({
    loggerInstance: logger as unknown as FastifyBaseLogger,
    bodyLimit,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });

  // Any content type is read as JSON (curl and some clients omit or misstate it), from bytes
  // that must be UTF-8: a replacement character silently standing in for bad bytes would be
  // trained on.
  const parseJson = (_req: unknown, body: Buffer, done: (err: Error | null, value?: unknown) => void): void => {
    const fail = (message: string, cause?: unknown): void => {
      const err = new TurnstreamError(ErrorCodes.DECODE, message, { cause, retriable: false });
      done(err, undefined);
    };
    if (!isUtf8(body)) return fail('the request body is not valid UTF-8');
    if (body.length === 0) return fail('the request body is empty; send a JSON object');
    try {
      done(null, JSON.parse(body.toString('utf8')));
    } catch (err) {
      fail(`the request body is not valid JSON: ${(err as Error).message}`, err);
    }
  };
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJson);
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseJson);

  app.setErrorHandler((err, request, reply) => {
    const { status, body } = toOpenAIError(err);
    if (status >= 500) request.log.error({ err, url: request.url }, 'request failed');
    if (status === 413 && body.error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      body.error.message = `the request body is too large: the limit is ${bodyLimit} bytes (GATEWAY_BODY_LIMIT_BYTES)`;
    // Answered before the body has all arrived (a 413 above all): keep the connection and discard
    // the rest, so the answer reaches a client that is still sending (gateway/body-drain.ts).
    if (bodyStillArriving(request.raw))
      drainRejectedBody(request.raw, reply, options.bodyDrain, (why, discarded) =>
        request.log.warn({ url: request.url, status, discarded }, `closed the connection of a refused request: ${why}`),
      );
    if (err instanceof TurnstreamError && err.retryAfterMs !== undefined)
      void reply.header('retry-after', String(Math.ceil(err.retryAfterMs / 1000)));
    void reply.code(status).send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send({
      error: { message: `no route ${request.method} ${request.url}`, type: 'not_found_error', code: 'TS_ERR_NOT_FOUND', param: null },
    });
  });

  app.addHook('onRequest', async (request) => {
    const path = request.url.split('?')[0];
    if (OPEN_ROUTES.has(path)) return;
    if (path === '/metrics' && metricsKey) {
      if (!metricsKey.match(presentedKey(request.headers)))
        throw new TurnstreamError(ErrorCodes.UNAUTHORIZED, '/metrics needs the metrics key (TURNSTREAM_METRICS_KEY)');
      return;
    }
    request.caller = auth.authenticate(request.headers);
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.requests.inc({ route: request.routeOptions.url ?? 'unknown', status: String(reply.statusCode) });
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  const readyMaxDepth = options.outboxReadyMaxDepth ?? 10_000;
  const stallMs = options.outboxStallMs ?? 60_000;
  app.get('/readyz', async (_request, reply) => {
    const ob = outbox?.stats();
    const checks = {
      engine: engine.ready(),
      kafka: link?.connected ?? false,
      outbox: ob?.healthy ?? false,
      outboxDepth: ob?.depth ?? 0,
      outboxStalledMs: ob?.stalledMs ?? 0,
      outboxDeadLetters: ob?.deadLettered ?? 0,
      generations: admission.running,
      queued: admission.waitingCount,
      policyVersion: policies?.version ?? llama?.version ?? null,
    };
    const problems = [
      ...(checks.engine ? [] : ['the engine is not loaded']),
      ...(checks.outbox ? [] : ['the outbox cannot be written']),
      ...(checks.outboxDepth > readyMaxDepth ? [`the outbox holds ${checks.outboxDepth} records (more than ${readyMaxDepth})`] : []),
      ...(checks.outboxStalledMs > stallMs ? [`the outbox has drained nothing for ${Math.round(checks.outboxStalledMs / 1000)} s`] : []),
    ];
    const ready = problems.length === 0;
    reply.code(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'not ready', ...(ready ? {} : { reasons: problems }), ...checks };
  });
  app.get('/metrics', async (_request, reply) => {
    if (outbox) {
      metrics.outboxDepth.set(outbox.depth);
      metrics.outboxDeadLetters.set(outbox.stats().deadLettered);
    }
    const { contentType, body } = await metrics.render();
    reply.type(contentType);
    return body;
  });
  app.get('/v1/models', async () => ({ object: 'list', data: await engine.models() }));

  let started = false;
  const gateway: Gateway = {
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
      capture = new TurnCapture({
        outbox,
        index,
        metrics,
        logger,
        boundMs: options.captureBoundMs,
        enabled: options.capture ?? true,
        maxTurnBytes: options.maxTurnBytes,
        oversizedDir: join(outboxDir, 'oversized'),
      });
      if (options.kafka) {
        link = new KafkaLink(options.kafka, logger, (c) => metrics.kafkaConnected.set(c ? 1 : 0));
        outbox.setSender(link.send, link.deadLetter);
        link.warmUp();
        const c = capture;
        if (options.shareSessions ?? true) link.followTurns((t) => c.learn(t), options.sessionShareWindowMs ?? 30 * 60 * 1000);
      }
      if (policies && options.builtin) {
        const b = options.builtin;
        await selectBackend(undefined, { logger });
        const modelId = b.modelId ?? 'turnstream-tiny';
        if ((b.initIfEmpty ?? true) && !(await new WeightStore(b.weightsDir).latest(modelId))) {
          const ref = await initCheckpoint(b.weightsDir, { modelId, config: b.initConfig });
          logger.info(
            { modelId, uri: ref.uri },
            b.initConfig
              ? 'weight store was empty: created version 0 (random init)'
              : 'weight store was empty: installed the shipped base checkpoint as version 0',
          );
        }
        const p = await policies.loadInitial();
        logger.info({ modelId: p.modelId, version: p.version }, 'policy loaded');
        if (link && (b.followWeights ?? true)) link.followWeights((wv) => policies!.offer(wv));
      }
      if (llama) {
        await llama.start();
        const l = llama;
        if (link) link.followWeights((wv) => l.offer(wv));
      }
      registerChatCompletions(app, {
        engine,
        capture,
        index,
        metrics,
        logger,
        gatewayId,
        defaultTurnType: options.defaultTurnType ?? 'main',
        generationTimeoutMs: options.generationTimeoutMs ?? 300_000,
        maxTokensLimit: options.maxTokensLimit ?? 262_144,
        defaultModel: () => policies?.modelId ?? options.llama?.model.name ?? options.upstream?.model ?? 'default',
        inFlight,
        admission,
        sse,
      });
      registerFeedback(app, capture);
      const address = await app.listen({ port: options.port ?? 30000, host: options.host ?? '127.0.0.1' });
      logger.info({ address, engine: engine.kind, gatewayId }, 'gateway listening');
      return address;
    },
    async stop(): Promise<void> {
      if (!started) return;
      started = false;
      // Stop accepting; in-flight requests finish (bounded by `stopGraceMs`, then aborted).
      const grace = setTimeout(() => {
        for (const c of inFlight) c.abort(new TurnstreamError(ErrorCodes.ABORTED, 'the gateway is shutting down'));
      }, options.stopGraceMs ?? 10_000);
      await app.close();
      clearTimeout(grace);
      await capture?.settle();
      const left = await outbox?.close(options.drainOnStopMs ?? 5000);
      if (left && left.depth > 0) logger.info({ depth: left.depth, dir: outboxDir }, 'outbox not empty at stop; the next start drains it');
      await link?.close();
      await engine.close();
    },
  };
  return gateway;
}
