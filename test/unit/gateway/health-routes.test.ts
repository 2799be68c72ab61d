/**
 * `/healthz` and `/readyz` through `app.inject()`: open even with API keys; `/readyz` 503 with
 * its reasons while the engine is not loaded or the outbox cannot deliver, 200 otherwise.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission } from '../../../gateway/admission.ts';
import { healthRoutes, type HealthDeps } from '../../../gateway/health-routes.ts';
import type { OutboxStats } from '../../../streams/index.ts';
import { scriptedEngine, testApp } from './route-app.ts';

const healthy: OutboxStats = { depth: 0, drained: 0, failures: 0, deadLettered: 0, stalledMs: 0, lastError: null, healthy: true };

async function readyz(deps: Partial<HealthDeps>): Promise<{ status: number; body: Record<string, unknown> }> {
  const { app } = testApp({ apiKeys: ['sk-1'] });
  await app.register(healthRoutes, {
    engine: scriptedEngine(),
    admission: new Admission(),
    outboxStats: () => healthy,
    kafkaConnected: () => true,
    policyVersion: () => 4,
    ...deps,
  });
  const res = await app.inject({ method: 'GET', url: '/readyz' });
  await app.close();
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return { status: res.statusCode, body: res.json() };
}

test('/healthz answers ok without a key, even with API keys on', async () => {
  const { app } = testApp({ apiKeys: ['sk-1'] });
  await app.register(healthRoutes, {
    engine: scriptedEngine({ ready: false }),
    admission: new Admission(),
    outboxStats: () => undefined,
    kafkaConnected: () => false,
    policyVersion: () => null,
  });
  const res = await app.inject({ method: 'GET', url: '/healthz' });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { status: 'ok' });
  await app.close();
});

test('/readyz is ready with a loaded engine and a healthy outbox, and reports what it checked', async () => {
  const r = await readyz({});
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, {
    status: 'ready',
    engine: true,
    kafka: true,
    outbox: true,
    outboxDepth: 0,
    outboxStalledMs: 0,
    outboxDeadLetters: 0,
    generations: 0,
    queued: 0,
    policyVersion: 4,
  });
});

test('/readyz is a 503 with its reasons before the outbox is open and while the engine is not loaded', async () => {
  const r = await readyz({ engine: scriptedEngine({ ready: false }), outboxStats: () => undefined, kafkaConnected: () => false });
  assert.equal(r.status, 503);
  assert.equal(r.body.status, 'not ready');
  assert.deepEqual(r.body.reasons, ['the engine is not loaded', 'the outbox cannot be written']);
  assert.equal(r.body.kafka, false);
});

test('/readyz is a 503 while the outbox holds too much or has drained nothing for too long; Kafka alone does not decide', async () => {
  const deep = await readyz({ outboxStats: () => ({ ...healthy, depth: 11 }), kafkaConnected: () => false, readyMaxDepth: 10 });
  assert.equal(deep.status, 503);
  assert.deepEqual(deep.body.reasons, ['the outbox holds 11 records (more than 10)']);
  const stalled = await readyz({ outboxStats: () => ({ ...healthy, depth: 1, stalledMs: 61_000 }) });
  assert.equal(stalled.status, 503);
  assert.deepEqual(stalled.body.reasons, ['the outbox has drained nothing for 61 s']);
  const away = await readyz({ outboxStats: () => ({ ...healthy, depth: 3, stalledMs: 5_000 }), kafkaConnected: () => false });
  assert.equal(away.status, 200);
});
