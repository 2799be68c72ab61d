/**
 * `POST /v1/feedback` through `app.inject()`: a 201 with the Feedback's id for a known turn (its
 * event in the outbox), and OpenAI-shaped errors for bad input, unknown turns, another user's
 * turn, and a gateway that captures nothing.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { feedbackRoute } from '../../../gateway/feedback-route.ts';
import type { Outbox } from '../../../streams/index.ts';
import { exampleTurn } from '../../support/fixtures.ts';
import { openAIError, testApp, testCapture, type TestAppOptions } from './route-app.ts';

const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of closers) await close();
});

/** The app with one known turn: alice's `turn` in `session-1`. */
async function feedbackApp(o: TestAppOptions & { capture?: boolean } = {}): Promise<{ app: FastifyInstance; outbox: Outbox }> {
  const { app, metrics } = testApp(o);
  const { capture, outbox, close } = await testCapture(metrics, { enabled: o.capture });
  capture.learn(turn);
  await app.register(feedbackRoute, { capture });
  closers.push(async () => {
    await app.close();
    await close();
  });
  return { app, outbox };
}

const turn = exampleTurn();
const post = (app: FastifyInstance, payload: string | object, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/v1/feedback', headers: { 'content-type': 'application/json', ...headers }, payload });

test('a rating of a known turn is a 201 with the feedback’s id, its session, and one event in the outbox', async () => {
  const { app, outbox } = await feedbackApp();
  const res = await post(app, { turn_id: turn.turnId, rating: 1, text: 'spot on' });
  assert.equal(res.statusCode, 201);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.equal(body.object, 'feedback');
  assert.match(body.id, /^[0-9a-f-]{36}$/);
  assert.equal(body.turn_id, turn.turnId);
  assert.equal(body.session_id, turn.sessionId);
  assert.equal(typeof body.created, 'number');
  assert.equal(outbox.depth, 1);
});

test('the response id (chatcmpl-<turn id>) names the turn too', async () => {
  const { app } = await feedbackApp();
  const res = await post(app, { turn_id: `chatcmpl-${turn.turnId}`, rating: -1 });
  assert.equal(res.statusCode, 201);
  assert.equal(res.json().turn_id, turn.turnId);
});

test('bad input is a 400 in OpenAI’s error shape naming the field', async () => {
  const { app, outbox } = await feedbackApp();
  const cases: Array<[string | object, string | null]> = [
    ['[1]', null],
    [{ turn_id: turn.turnId, rating: 5 }, 'rating'],
    [{ turn_id: turn.turnId }, 'rating'],
    [{ turn_id: 42, rating: 1 }, 'turn_id'],
    [{ rating: 1 }, 'turn_id'],
    [{ turn_id: turn.turnId, session_id: 'other', rating: 1 }, 'session_id'],
  ];
  for (const [payload, param] of cases) {
    const res = await post(app, payload);
    assert.equal(res.statusCode, 400, JSON.stringify(payload));
    const e = openAIError(res.body);
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.param, param, JSON.stringify(payload));
  }
  assert.equal(outbox.depth, 0);
});

test('an unknown turn is a 404 naming turn_id', async () => {
  const { app } = await feedbackApp();
  const res = await post(app, { turn_id: '00000000-0000-4000-8000-000000000000', rating: 1 });
  assert.equal(res.statusCode, 404);
  const e = openAIError(res.body);
  assert.equal(e.type, 'not_found_error');
  assert.equal(e.code, 'TS_ERR_NOT_FOUND');
  assert.equal(e.param, 'turn_id');
});

test('with API keys on: no key is a 401, another user’s turn a 403, the owner’s key a 201', async () => {
  const { app } = await feedbackApp({ apiKeys: ['sk-a:alice', 'sk-b:bob'] });
  const payload = { turn_id: turn.turnId, rating: 1 };
  assert.equal((await post(app, payload)).statusCode, 401);
  const other = await post(app, payload, { authorization: 'Bearer sk-b' });
  assert.equal(other.statusCode, 403);
  const e = openAIError(other.body);
  assert.deepEqual([e.type, e.code, e.param], ['permission_error', 'TS_ERR_FORBIDDEN', 'turn_id']);
  assert.equal((await post(app, payload, { authorization: 'Bearer sk-a' })).statusCode, 201);
});

test('a gateway running with capture off answers 503: the feedback would not be recorded', async () => {
  const { app } = await feedbackApp({ capture: false });
  const res = await post(app, { turn_id: turn.turnId, rating: 1 });
  assert.equal(res.statusCode, 503);
  assert.equal(openAIError(res.body).type, 'service_unavailable_error');
});
