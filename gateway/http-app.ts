/**
 * The fastify instance every gateway route runs in: request bodies read as JSON from UTF-8
 * bytes, every error answered in OpenAI's shape, who is calling set on the request, and each
 * answer counted in `turnstream_gateway_requests_total`. The routes themselves are plugins
 * registered on it (chat-completions.ts, completions.ts, feedback-route.ts, models-route.ts,
 * metrics-route.ts, health-routes.ts).
 */
import { isUtf8 } from 'node:buffer';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { ErrorCodes, TurnstreamError, type Logger, KeySet, presentedKey } from '../core/index.ts';
import type { Authenticator, Caller } from './auth.ts';
import { GATEWAY_DEFAULTS } from './defaults.ts';
import { bodyStillArriving, drainRejectedBody, type BodyDrainLimits } from './body-drain.ts';
import type { GatewayMetrics } from './metrics.ts';
import { toOpenAIError } from './openai-errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling (set for every route but the open ones). */
    caller?: Caller;
  }
}

export interface HttpAppOptions {
  logger: Logger;
  metrics: GatewayMetrics;
  /** Checks the API keys of every route but the open ones. */
  auth: Authenticator;
  /** The key `/metrics` requires instead of an API key. @default none */
  metricsKey?: string;
  /** Largest request body. @default 4 MiB */
  bodyLimit?: number;
  /** Bounds on reading and discarding a refused body. @default see BodyDrainLimits */
  bodyDrain?: BodyDrainLimits;
}

/** Routes open to anyone (a load balancer's probes). */
const OPEN_ROUTES = new Set(['/healthz', '/readyz']);

type Done = (err: Error | null, value?: unknown) => void;

/**
 * Any content type is read as JSON (curl and some clients omit or misstate it), from bytes that
 * must be UTF-8: a replacement character silently standing in for bad bytes would be trained on.
 */
function parseJson(_req: unknown, body: Buffer, done: Done): void {
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
}

export function createHttpApp(o: HttpAppOptions): FastifyInstance {
  const bodyLimit = o.bodyLimit ?? GATEWAY_DEFAULTS.bodyLimitBytes;
  const metricsKey = o.metricsKey ? new KeySet([[o.metricsKey, true]]) : null;
  const app = Fastify({
    loggerInstance: o.logger as unknown as FastifyBaseLogger,
    bodyLimit,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJson);
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseJson);

  app.setErrorHandler((err, request, reply) => {
    const { status, body } = toOpenAIError(err);
    // A client that went away (an agent's episode timed out, Ctrl-C) is not the gateway's failure.
    if (err instanceof TurnstreamError && err.code === ErrorCodes.ABORTED)
      request.log.info({ url: request.url }, `request ended: ${err.message}`);
    else if (status >= 500) request.log.error({ err, url: request.url }, 'request failed');
    if (status === 413 && body.error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      body.error.message = `the request body is too large: the limit is ${bodyLimit} bytes (GATEWAY_BODY_LIMIT_BYTES)`;
    // Answered before the body has all arrived (a 413 above all): keep the connection and discard
    // the rest, so the answer reaches a client that is still sending (gateway/body-drain.ts).
    if (bodyStillArriving(request.raw))
      drainRejectedBody(request.raw, reply, o.bodyDrain, (why, discarded) =>
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
    request.caller = o.auth.authenticate(request.headers);
  });
  app.addHook('onResponse', async (request, reply) => {
    o.metrics.requests.inc({ route: request.routeOptions.url ?? 'unknown', status: String(reply.statusCode) });
  });
  return app;
}
