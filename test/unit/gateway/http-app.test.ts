/**
 * The app every route runs in (gateway/http-app.ts), through `inject()`: a client that went away
 * is logged as the end of its request, not as the gateway's failure; a real failure still is one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { ErrorCodes, TurnstreamError, type Logger } from '../../../core/index.ts';
import { Authenticator } from '../../../gateway/auth.ts';
import { createHttpApp } from '../../../gateway/http-app.ts';
import { GatewayMetrics } from '../../../gateway/metrics.ts';

/** An app whose log lines are kept, with one route that throws `err`. */
function appThrowing(err: Error): { app: ReturnType<typeof createHttpApp>; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) }) as unknown as Logger;
  const app = createHttpApp({ logger, metrics: new GatewayMetrics('gw-test'), auth: new Authenticator([], []) });
  app.post('/boom', async () => {
    throw err;
  });
  return { app, lines };
}

test('a client that closed the connection is logged at info, not as a failed request', async () => {
  const { app, lines } = appThrowing(new TurnstreamError(ErrorCodes.ABORTED, 'client closed the connection'));
  const res = await app.inject({ method: 'POST', url: '/boom', payload: {} });
  assert.equal(res.statusCode, 503);
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [[30, 'request ended: client closed the connection']],
  );
  await app.close();
});

test('an internal error is still logged as a failed request', async () => {
  const { app, lines } = appThrowing(new TurnstreamError(ErrorCodes.INTERNAL, 'broken'));
  const res = await app.inject({ method: 'POST', url: '/boom', payload: {} });
  assert.equal(res.statusCode, 500);
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [[50, 'request failed']],
  );
  await app.close();
});
