/**
 * The HTTP surface without Kafka (turns stay in the outbox): OpenAI-shaped errors for every
 * bad input while the server keeps serving, auth, body limit, health, metrics, feedback.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OpenAIErrorBody } from '../../../gateway/openai-errors.ts';
import { startGateway, tempHome, type StartedGateway } from '../../integration/gateway/support.ts';
import { waitFor } from '../../support/wait-for.ts';

let home: Awaited<ReturnType<typeof tempHome>>;
let g: StartedGateway;
before(async () => {
  home = await tempHome('http');
  g = await startGateway({ home: home.dir, apiKeys: ['sk-1:carol'], metricsKey: 'mk-1', bodyLimitBytes: 200_000 });
});
after(async () => {
  await g?.gw.stop();
  await home?.cleanup();
});

const auth = { authorization: 'Bearer sk-1' };
/** What these tests read of an answer: the OpenAI error shape, or a stored feedback's ids. */
type Reply = Partial<OpenAIErrorBody> & { id?: string; session_id?: string };

async function post(
  path: string,
  body: string | object,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Reply; headers: Headers }> {
  const res = await fetch(`${g.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Reply = {};
  try {
    json = JSON.parse(text) as Reply;
  } catch {
    /* SSE or text: no fields to read */
  }
  return { status: res.status, json, headers: res.headers };
}

const ok = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };

test('every bad input gets a 400 in OpenAI error shape, and the server keeps answering', async () => {
  const cases: Array<[string | object, string | null]> = [
    ['{not json', null],
    ['', null],
    ['[1,2]', null],
    [{ messages: 'hi' }, 'messages'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
    [{ ...ok, n: 129 }, 'n'],
    [{ ...ok, max_tokens: 10_000_000 }, 'max_tokens'],
    [{ ...ok, temperature: -1 }, 'temperature'],
    [{ ...ok, temperature: '0.5' }, 'temperature'],
    [{ ...ok, stop: 5 }, 'stop'],
    [{ ...ok, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    [{ ...ok, top_logprobs: 2 }, 'top_logprobs'],
    [{ ...ok, logprobs: 'yes' }, 'logprobs'],
    // What OpenAI refuses too (issue 13, item 8).
    [{ messages: [{ role: 'user', content: [{ type: 'hologram', hologram: {} }] }] }, 'messages[0].content[0].type'],
    [
      { ...ok, tools: [{ type: 'function', function: { name: 'read' } }], tool_choice: { type: 'function', function: { name: 'write' } } },
      'tool_choice',
    ],
    [{ ...ok, tool_choice: 'required' }, 'tool_choice'],
    [{ ...ok, session_done: { a: 1 } }, 'session_done'],
    [{ ...ok, logit_bias: { hello: 'world' } }, 'logit_bias'],
    [{ ...ok, logit_bias: { '50256': 500 } }, 'logit_bias'],
    [{ ...ok, user: 'u'.repeat(100_000) }, 'user'],
    [{ messages: Array.from({ length: 2049 }, () => ({ role: 'user', content: 'x' })) }, 'messages'],
    [{ messages: [{ role: 'user', content: 'half a pair \ud800' }] }, 'messages[0].content'],
  ];
  for (const [body, param] of cases) {
    const r = await post('/v1/chat/completions', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.error?.type, 'invalid_request_error');
    assert.equal(typeof r.json.error?.message, 'string');
    assert.ok(r.json.error && 'code' in r.json.error && 'param' in r.json.error);
    if (param) assert.equal(r.json.error?.param, param);
  }
  // Bytes that are not UTF-8 are refused, not silently replaced.
  const raw = await fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"caf'), Buffer.from([0xe9, 0xff]), Buffer.from('"}]}')]),
  });
  assert.equal(raw.status, 400);
  assert.match(((await raw.json()) as { error: { message: string } }).error.message, /UTF-8/);
  const bad = await post('/v1/chat/completions', { ...ok, stream: true, messages: [] });
  assert.equal(bad.status, 400, 'a bad streaming request is refused before the stream starts');
  const good = await post('/v1/chat/completions', ok);
  assert.equal(good.status, 200);
  assert.match(good.headers.get('x-turn-id')!, /^[0-9a-f-]{36}$/);
});

test('auth: 401 in OpenAI shape; health and readiness are public, /metrics needs the metrics key', async () => {
  const r = await post('/v1/chat/completions', ok, { authorization: 'Bearer nope' });
  assert.equal(r.status, 401);
  assert.equal(r.json.error?.type, 'authentication_error');
  const m = await fetch(`${g.url}/v1/models`);
  assert.equal(m.status, 401);
  assert.equal((await fetch(`${g.url}/healthz`)).status, 200);
  const ready = await fetch(`${g.url}/readyz`);
  assert.equal(ready.status, 200, 'ready with the outbox healthy even without Kafka');
  const body = (await ready.json()) as { kafka: boolean; outbox: boolean };
  assert.equal(body.kafka, false);
  assert.equal(body.outbox, true);
  assert.equal((await fetch(`${g.url}/metrics`)).status, 401, 'no key');
  assert.equal((await fetch(`${g.url}/metrics`, { headers: auth })).status, 401, 'an API key is not the metrics key');
  const res = await fetch(`${g.url}/metrics`, { headers: { authorization: 'Bearer mk-1' } });
  assert.equal(res.status, 200);
  const metrics = await res.text();
  for (const name of [
    'turnstream_gateway_requests_total',
    'turnstream_gateway_request_duration_seconds',
    'turnstream_gateway_tokens_total',
    'turnstream_gateway_turns_captured_total',
    'turnstream_gateway_outbox_depth',
    'turnstream_gateway_policy_version',
  ]) {
    assert.match(metrics, new RegExp(name), name);
  }
});

test('body limit: 413 in OpenAI shape; a ~47 KB system prompt is fine and truncated, not refused', async () => {
  const huge = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x'.repeat(300_000) }] });
  assert.equal(huge.status, 413);
  assert.equal(huge.json.error?.type, 'invalid_request_error');
  const big = await post('/v1/chat/completions', {
    messages: [
      { role: 'system', content: 'rules '.repeat(8000) },
      { role: 'user', content: 'hi' },
    ],
    max_completion_tokens: 4,
    tools: [{ type: 'function', function: { name: 'read', parameters: {} } }],
  });
  assert.equal(big.status, 200);
});

test('feedback: by turn id (session looked up), by session id, and clear errors', async () => {
  const chat = await post('/v1/chat/completions', ok, { 'x-session-id': 'fb-s' });
  const turnId = chat.headers.get('x-turn-id')!;
  const byTurn = await post('/v1/feedback', { turn_id: turnId, rating: 1 });
  assert.equal(byTurn.status, 201);
  assert.equal(byTurn.json.session_id, 'fb-s');
  assert.match(byTurn.json.id ?? '', /^[0-9a-f-]{36}$/);
  const bySession = await post('/v1/feedback', { session_id: 'fb-s', text: 'use shorter answers' });
  assert.equal(bySession.status, 201);
  assert.equal((await post('/v1/feedback', { turn_id: 'unknown', rating: 1 })).status, 404);
  assert.equal((await post('/v1/feedback', { session_id: 's', rating: 5 })).json.error?.param, 'rating');
  assert.equal((await post('/v1/feedback', { rating: 1 })).status, 400);
  assert.ok(g.gw.outbox.depth >= 3, 'turns and feedback wait in the outbox');
});

test('capture off: calls are served and nothing reaches the outbox; feedback answers 503', async () => {
  const h = await tempHome('http-nocapture');
  const off = await startGateway({ home: h.dir, capture: false });
  try {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${off.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ok),
      });
      assert.equal(res.status, 200);
      await res.text();
    }
    assert.equal(off.gw.outbox.depth, 0);
    const fb = await fetch(`${off.url}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 's', rating: 1 }),
    });
    assert.equal(fb.status, 503);
    assert.equal(((await fb.json()) as { error: { code: string } }).error.code, 'TS_ERR_UNAVAILABLE');
  } finally {
    await off.gw.stop();
    await h.cleanup();
  }
});

test('/readyz is not ready while the outbox is stuck (nothing drained for a while) or too deep, and says why; chats are still answered', async () => {
  const h = await tempHome('http-readyz');
  const stuck = await startGateway({ home: h.dir, outboxStallMs: 300, outboxReadyMaxDepth: 2 });
  const ready = async () => {
    const r = await fetch(`${stuck.url}/readyz`);
    return { status: r.status, body: (await r.json()) as { reasons?: string[]; outboxDepth: number } };
  };
  const chat = () =>
    fetch(`${stuck.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ok),
    }).then((r) => r.status);
  try {
    assert.equal((await ready()).status, 200, 'an empty outbox is fine without Kafka');
    assert.equal(await chat(), 200);
    const stalled = await waitFor('/readyz to turn away the stuck outbox', async () => {
      const r = await ready();
      return r.status === 503 && r;
    });
    assert.equal(stalled.status, 503);
    assert.match(stalled.body.reasons!.join(' '), /drained nothing/);
    assert.equal(await chat(), 200);
    assert.equal(await chat(), 200, 'still answering while not ready');
    const deep = await ready();
    assert.equal(deep.body.outboxDepth, 3);
    assert.match(deep.body.reasons!.join(' '), /holds 3 records \(more than 2\)/);
  } finally {
    await stuck.gw.stop();
    await h.cleanup();
  }
});
