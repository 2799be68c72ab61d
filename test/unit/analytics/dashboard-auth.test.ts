/**
 * The dashboard shows per-user and per-session views: with keys configured it refuses callers
 * without one (a browser gets a login prompt), and `/metrics` takes the metrics key.
 * Requests are injected; the refused ones never reach ClickHouse.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { buildDashboardApp } from '../../../analytics/index.ts';
import { AnalyticsStore } from '../../../warehouse/index.ts';

const store = new AnalyticsStore({ url: 'http://127.0.0.1:9' });
const app = buildDashboardApp({ store, keys: ['dash-key', 'sk-alice'], metricsKey: 'mk' });
after(async () => {
  await app.close();
  await store.close();
});
const get = (url: string, authorization?: string) => app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} });
const basic = (key: string) => `Basic ${Buffer.from(`me:${key}`).toString('base64')}`;

test('without a key: 401 with a login prompt, for the page and its API alike', async () => {
  for (const url of ['/dashboard', '/api/users', '/api/sessions?user=alice', '/api/overview', '/']) {
    const r = await get(url);
    assert.equal(r.statusCode, 401, url);
    assert.match(String(r.headers['www-authenticate']), /^Basic realm="turnstream dashboard"/);
    assert.equal(r.json().error.code, 'TS_ERR_UNAUTHORIZED');
  }
  assert.equal((await get('/dashboard', 'Bearer wrong')).statusCode, 401);
});

test('the dashboard key or an API key opens it, by a browser login or a bearer token', async () => {
  assert.equal((await get('/dashboard', basic('dash-key'))).statusCode, 200);
  assert.equal((await get('/dashboard', 'Bearer sk-alice')).statusCode, 200);
});

test('/metrics needs the metrics key; /healthz stays open', async () => {
  assert.equal((await get('/metrics', 'Bearer dash-key')).statusCode, 401);
  assert.equal((await get('/metrics', 'Bearer mk')).statusCode, 200);
  assert.notEqual((await get('/healthz')).statusCode, 401);
});

test('with no keys configured the dashboard is open (one machine, local use)', async () => {
  const open = buildDashboardApp({ store });
  assert.equal((await open.inject({ method: 'GET', url: '/dashboard' })).statusCode, 200);
  await open.close();
});
