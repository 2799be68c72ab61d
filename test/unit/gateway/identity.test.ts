/**
 * Identity and ownership with API keys on (no Kafka: events stay in the outbox, read back from
 * its file): nobody poses as another user, nobody writes into or rates another user's session
 * or turn, feedback on an unknown turn is a 404, and a service key acting for a user is recorded.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Feedback, Turn } from '../../../schemas/index.ts';
import type { OpenAIErrorBody } from '../../../gateway/openai-errors.ts';
import { startGateway, tempHome, type StartedGateway } from '../../integration/gateway/support.ts';

let home: Awaited<ReturnType<typeof tempHome>>;
let g: StartedGateway;
before(async () => {
  home = await tempHome('identity');
  g = await startGateway({ home: home.dir, apiKeys: ['sk-alice:alice', 'sk-bob:bob', 'sk-anon'], serviceKeys: ['sk-svc:frontend'] });
});
after(async () => {
  await g?.gw.stop();
  await home?.cleanup();
});

const key = (k: string) => ({ authorization: `Bearer ${k}` });
const ok = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 };

/** What these tests read of an answer: the OpenAI error shape, or a stored feedback's ids. */
type Reply = Partial<OpenAIErrorBody> & { id?: string; session_id?: string };

async function post(
  path: string,
  body: object,
  headers: Record<string, string>,
): Promise<{ status: number; json: Reply; turnId: string | null }> {
  const res = await fetch(`${g.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Reply, turnId: res.headers.get('x-turn-id') };
}

/** The events captured so far, as the outbox holds them. */
async function captured(): Promise<Array<{ topic: string; value: Turn & Feedback }>> {
  await g.gw.outbox.flush(0);
  const text = await readFile(join(home.dir, 'outbox', 'outbox.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

test('a user key cannot pose as another user, by header or body; naming itself is fine', async () => {
  const byHeader = await post('/v1/chat/completions', ok, { ...key('sk-alice'), 'x-user-id': 'bob' });
  assert.equal(byHeader.status, 403);
  assert.deepEqual(
    [byHeader.json.error?.type, byHeader.json.error?.code, byHeader.json.error?.param],
    ['permission_error', 'TS_ERR_FORBIDDEN', 'X-User-Id'],
  );
  const byBody = await post('/v1/chat/completions', { ...ok, user: 'bob' }, key('sk-alice'));
  assert.equal(byBody.status, 403);
  assert.equal(byBody.json.error?.param, 'user');
  const anon = await post('/v1/chat/completions', ok, { ...key('sk-anon'), 'x-user-id': 'bob' });
  assert.equal(anon.status, 403, 'a key without a user cannot name one');
  const self = await post('/v1/chat/completions', ok, { ...key('sk-alice'), 'x-user-id': 'alice', 'x-session-id': 'alice-own' });
  assert.equal(self.status, 200);
  const turn = (await captured()).find((e) => e.value.turnId === self.turnId)!.value;
  assert.deepEqual([turn.userId, turn.actedBy], ['alice', null]);
  const fb = await post('/v1/feedback', { turn_id: self.turnId, rating: 1 }, { ...key('sk-alice'), 'x-user-id': 'bob' });
  assert.equal(fb.status, 403, 'feedback cannot pose either');
});

test("another user's session: chats into it and feedback on it or its turns are 403; the owner's are fine", async () => {
  const a = await post('/v1/chat/completions', ok, { ...key('sk-alice'), 'x-session-id': 'alice-s' });
  assert.equal(a.status, 200);
  const intoHeader = await post('/v1/chat/completions', ok, { ...key('sk-bob'), 'x-session-id': 'alice-s' });
  assert.equal(intoHeader.status, 403);
  assert.equal(intoHeader.json.error?.param, 'X-Session-Id');
  const intoBody = await post('/v1/chat/completions', { ...ok, session_id: 'alice-s' }, key('sk-bob'));
  assert.equal(intoBody.status, 403);
  assert.equal(intoBody.json.error?.param, 'session_id');
  assert.equal((await post('/v1/feedback', { turn_id: a.turnId, rating: -1 }, key('sk-bob'))).status, 403, "rating alice's turn");
  assert.equal((await post('/v1/feedback', { turn_id: `chatcmpl-${a.turnId}`, rating: -1 }, key('sk-bob'))).status, 403);
  assert.equal((await post('/v1/feedback', { session_id: 'alice-s', rating: -1 }, key('sk-bob'))).status, 403, "rating alice's session");
  const own = await post('/v1/feedback', { turn_id: a.turnId, rating: 1 }, key('sk-alice'));
  assert.equal(own.status, 201);
  assert.equal(own.json.session_id, 'alice-s');
  assert.equal((await post('/v1/feedback', { session_id: 'alice-s', text: 'shorter please' }, key('sk-alice'))).status, 201);
  assert.equal((await post('/v1/chat/completions', ok, { ...key('sk-alice'), 'x-session-id': 'alice-s' })).status, 200, 'alice continues');
  const events = await captured();
  assert.equal(
    events.filter((e) => e.topic === 'turns' && e.value.sessionId === 'alice-s').length,
    2,
    "bob's calls left nothing in alice's session",
  );
  assert.ok(events.filter((e) => e.topic === 'feedback' && e.value.sessionId === 'alice-s').every((e) => e.value.userId === 'alice'));
});

test('feedback on an unknown turn is 404, with or without a session id; an unknown session is 404 with keys on', async () => {
  const unknown = '00000000-0000-4000-8000-000000000000';
  for (const body of [
    { turn_id: unknown, rating: 1 },
    { turn_id: unknown, session_id: 'alice-own', rating: 1 },
  ]) {
    const r = await post('/v1/feedback', body, key('sk-alice'));
    assert.equal(r.status, 404, JSON.stringify(body));
    assert.deepEqual([r.json.error?.code, r.json.error?.param], ['TS_ERR_NOT_FOUND', 'turn_id']);
  }
  assert.equal((await post('/v1/feedback', { session_id: 'never-seen', rating: 1 }, key('sk-alice'))).status, 404);
  const a = await post('/v1/chat/completions', ok, { ...key('sk-alice'), 'x-session-id': 'alice-t' });
  const mismatch = await post('/v1/feedback', { turn_id: a.turnId, session_id: 'alice-own', rating: 1 }, key('sk-alice'));
  assert.equal(mismatch.status, 400, 'a turn named with another session');
  assert.equal(mismatch.json.error?.param, 'session_id');
});

test('a service key acts for any user; the Turn and the Feedback record who acted', async () => {
  const r = await post('/v1/chat/completions', ok, { ...key('sk-svc'), 'x-user-id': 'carol', 'x-session-id': 'carol-s' });
  assert.equal(r.status, 200);
  const fb = await post('/v1/feedback', { turn_id: r.turnId, rating: 1, user: 'carol' }, key('sk-svc'));
  assert.equal(fb.status, 201);
  const events = await captured();
  const turn = events.find((e) => e.value.turnId === r.turnId && e.topic === 'turns')!.value;
  assert.deepEqual([turn.userId, turn.actedBy], ['carol', 'frontend']);
  const feedback = events.find((e) => e.topic === 'feedback' && e.value.turnId === r.turnId)!.value;
  assert.deepEqual([feedback.userId, feedback.actedBy], ['carol', 'frontend']);
  // The service cannot put carol's words into another user's session either.
  assert.equal((await post('/v1/chat/completions', ok, { ...key('sk-svc'), 'x-user-id': 'carol', 'x-session-id': 'alice-s' })).status, 403);
});

test('with keys on and no metrics key, /metrics needs an API key; /healthz and /readyz stay open', async () => {
  assert.equal((await fetch(`${g.url}/metrics`)).status, 401);
  assert.equal((await fetch(`${g.url}/metrics`, { headers: key('sk-alice') })).status, 200);
  assert.equal((await fetch(`${g.url}/healthz`)).status, 200);
  assert.notEqual((await fetch(`${g.url}/readyz`)).status, 401);
});
