/** `GET /v1/models` through `app.inject()`: OpenAI's list of the engine's models, behind the API keys. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modelsRoute } from '../../../gateway/models-route.ts';
import { assertOpenAIError, openAIError, scriptedEngine, testApp } from './route-app.ts';

test('lists the engine’s models as OpenAI does, in JSON', async () => {
  const { app } = testApp();
  await app.register(modelsRoute, { engine: scriptedEngine({ model: 'tiny' }) });
  const res = await app.inject({ method: 'GET', url: '/v1/models' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.deepEqual(res.json(), { object: 'list', data: [{ id: 'tiny', object: 'model', created: 1_700_000_000, owned_by: 'turnstream' }] });
  await app.close();
});

test('with API keys on, a call without a key is a 401 in OpenAI’s error shape; with one it is served', async () => {
  const { app } = testApp({ apiKeys: ['sk-1:carol'] });
  await app.register(modelsRoute, { engine: scriptedEngine() });
  const refused = await app.inject({ method: 'GET', url: '/v1/models' });
  assert.equal(refused.statusCode, 401);
  assert.equal(openAIError(refused.body).type, 'authentication_error');
  const served = await app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer sk-1' } });
  assert.equal(served.statusCode, 200);
  await app.close();
});

test('another method on the path is a 404 in OpenAI’s error shape', async () => {
  const { app } = testApp();
  await app.register(modelsRoute, { engine: scriptedEngine() });
  const res = await app.inject({ method: 'DELETE', url: '/v1/models' });
  assert.equal(res.statusCode, 404);
  assertOpenAIError(res.body, { message: 'no route DELETE /v1/models', type: 'not_found_error', code: 'TS_ERR_NOT_FOUND' });
  await app.close();
});
