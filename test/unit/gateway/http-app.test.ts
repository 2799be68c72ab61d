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

/** How an app whose route throws `err` answers a call to it (the status) and logs it (each line's level and message). */
async function answerToThrow(err: Error): Promise<{ status: number; logged: Array<[number, string]> }> {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) }) as unknown as Logger;
  const app = createHttpApp({ logger, metrics: new GatewayMetrics('gw-test'), auth: new Authenticator([], []) });
  app.post('/boom', async () => {
    throw err;
  });
  const res = await app.inject({ method: 'POST', url: '/boom', payload: {} });
  const logged = lines.map((l): [number, string] => [l.level, l.msg]);
  await app.close();
  return { status: res.statusCode, logged };
}

test('a client that closed the connection is logged at info, not as a failed request', async () => {
  const { status, logged } = await answerToThrow(new TurnstreamError(ErrorCodes.ABORTED, 'client closed the connection'));
  assert.equal(status, 503);
  assert.deepEqual(logged, [[30, 'request ended: client closed the connection']]);
});

test('an internal error is still logged as a failed request', async () => {
  const { status, logged } = await answerToThrow(new TurnstreamError(ErrorCodes.INTERNAL, 'broken'));
  assert.equal(status, 500);
  assert.deepEqual(logged, [[50, 'request failed']]);
});
