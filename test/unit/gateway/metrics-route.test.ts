/**
 * `GET /metrics` through `app.inject()`: Prometheus' text format with the gateway's metric
 * names, the outbox gauges read fresh, every answer counted; the metrics key or an API key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metricsRoute } from '../../../gateway/metrics-route.ts';
import type { Outbox } from '../../../streams/index.ts';
import { assertOpenAIError, testApp, testCapture } from './route-app.ts';

test('serves the gateway’s metrics in Prometheus’ text format, the outbox depth read when asked', async () => {
  const { app, metrics } = testApp();
  const { outbox, close } = await testCapture(metrics);
  await outbox.append('feedback', 's-1', { any: 'record' });
  await app.register(metricsRoute, { metrics, outbox: () => outbox });
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  for (const name of [
    'turnstream_gateway_requests_total',
    'turnstream_gateway_request_duration_seconds',
    'turnstream_gateway_tokens_total',
    'turnstream_gateway_generations_active',
    'turnstream_gateway_streams_cut_total',
  ])
    assert.match(res.body, new RegExp(`# TYPE ${name} `), name);
  // Every gateway series carries its gateway_id, so several gateways' series stay apart.
  assert.match(res.body, /^turnstream_gateway_outbox_depth\{gateway_id="gw-test"\} 1$/m);
  assert.match(res.body, /^turnstream_gateway_outbox_dead_letters\{gateway_id="gw-test"\} 0$/m);
  await app.close();
  await close();
});

test('every answer is counted by route and status, the refused ones too', async () => {
  const { app, metrics } = testApp({ metricsKey: 'mk-1' });
  await app.register(metricsRoute, { metrics, outbox: () => null });
  assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer mk-1' } });
  assert.match(res.body, /^turnstream_gateway_requests_total\{route="\/metrics",status="401"[^}]*\} 1$/m);
  await app.close();
});

test('with a metrics key, only that key reads the metrics (an API key does not); 401 in OpenAI’s shape', async () => {
  const { app, metrics } = testApp({ apiKeys: ['sk-1'], metricsKey: 'mk-1' });
  await app.register(metricsRoute, { metrics, outbox: () => null as Outbox | null });
  for (const headers of [{}, { authorization: 'Bearer sk-1' }]) {
    const res = await app.inject({ method: 'GET', url: '/metrics', headers });
    assert.equal(res.statusCode, 401);
    assertOpenAIError(res.body, {
      message: '/metrics needs the metrics key (TURNSTREAM_METRICS_KEY)',
      type: 'authentication_error',
      code: 'TS_ERR_UNAUTHORIZED',
    });
  }
  assert.equal((await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer mk-1' } })).statusCode, 200);
  await app.close();
});

test('without a metrics key, API keys guard /metrics like any route; with no keys at all it is open', async () => {
  const keyed = testApp({ apiKeys: ['sk-1'] });
  await keyed.app.register(metricsRoute, { metrics: keyed.metrics, outbox: () => null });
  assert.equal((await keyed.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
  assert.equal((await keyed.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer sk-1' } })).statusCode, 200);
  await keyed.app.close();
  const open = testApp();
  await open.app.register(metricsRoute, { metrics: open.metrics, outbox: () => null });
  assert.equal((await open.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
  await open.app.close();
});
