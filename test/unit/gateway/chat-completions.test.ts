/**
 * `POST /v1/chat/completions` through `app.inject()` with a scripted engine: the answer in
 * OpenAI's shape with the turn's headers, the streamed answer as SSE, one Turn captured per
 * answer, every bad input a 4xx in OpenAI's error shape that never reaches the engine.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { ErrorCodes, TurnstreamError } from '../../../core/index.ts';
import { Admission } from '../../../gateway/admission.ts';
import { chatCompletions } from '../../../gateway/chat-completions.ts';
import type { GatewayMetrics } from '../../../gateway/metrics.ts';
import type { ChatRequest } from '../../../gateway/chat-request.ts';
import type { EngineCallOptions } from '../../../gateway/engine.ts';
import type { Turn } from '../../../schemas/index.ts';
import type { Outbox } from '../../../streams/index.ts';
import { waitFor } from '../../support/wait-for.ts';
import { assertOpenAIError, openAIError, routeApp, scriptedEngine, type ScriptedEngine, type TestAppOptions } from './route-app.ts';

const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of closers) await close();
});

async function chatApp(
  engine: ScriptedEngine = scriptedEngine(),
  o: TestAppOptions & { admission?: Admission } = {},
): Promise<{ app: FastifyInstance; outbox: Outbox; metrics: GatewayMetrics }> {
  const { app, outbox, metrics, close } = await routeApp([chatCompletions], engine, o);
  closers.push(close);
  return { app, outbox, metrics };
}

const hi = { messages: [{ role: 'user', content: 'hi' }] };
const post = (app: FastifyInstance, payload: string | object, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { 'content-type': 'application/json', ...headers }, payload });

test('answers in OpenAI’s shape, with the turn’s id and session in headers, and captures one Turn', async () => {
  const { app, outbox } = await chatApp();
  const res = await post(app, hi, { 'x-session-id': 'sess-1' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const turnId = String(res.headers['x-turn-id']);
  assert.equal(res.headers['x-session-id'], 'sess-1');
  assert.equal(res.headers['x-policy-version'], '3');
  const body = res.json();
  assert.equal(body.id, `chatcmpl-${turnId}`);
  assert.equal(body.object, 'chat.completion');
  assert.equal(body.model, 'scripted');
  assert.deepEqual(body.choices, [
    { index: 0, message: { role: 'assistant', content: 'Hello', refusal: null }, logprobs: null, finish_reason: 'stop' },
  ]);
  assert.deepEqual(body.usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
  assert.equal(outbox.depth, 1);
});

test('streams SSE chunks: the role, each delta, the finish reason, the usage when asked, then [DONE]', async () => {
  const { app, outbox } = await chatApp();
  const res = await post(app, { ...hi, stream: true, stream_options: { include_usage: true } });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(res.headers['cache-control'], 'no-cache');
  const turnId = String(res.headers['x-turn-id']);
  assert.ok(res.headers['x-session-id']);
  const events = res.body.split('\n\n').filter(Boolean);
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
  assert.ok(chunks.every((c) => c.id === `chatcmpl-${turnId}` && c.object === 'chat.completion.chunk'));
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello');
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
  assert.equal(outbox.depth, 1);
});

test('every bad input is a 400 in OpenAI’s error shape naming the field, and never reaches the engine', async () => {
  const engine = scriptedEngine();
  const { app, outbox } = await chatApp(engine);
  const cases: Array<[string | object, string | null, string]> = [
    ['{not json', null, 'TS_ERR_DECODE'],
    ['', null, 'TS_ERR_DECODE'],
    [{ messages: 'hi' }, 'messages', 'TS_ERR_INVALID_INPUT'],
    [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', 'TS_ERR_INVALID_INPUT'],
    [{ ...hi, max_tokens: 1001 }, 'max_tokens', 'TS_ERR_INVALID_INPUT'],
    [{ ...hi, temperature: -1 }, 'temperature', 'TS_ERR_INVALID_INPUT'],
    [{ ...hi, logprobs: true, top_logprobs: 21 }, 'top_logprobs', 'TS_ERR_INVALID_INPUT'],
  ];
  for (const [payload, param, code] of cases) {
    const res = await post(app, payload);
    assert.equal(res.statusCode, 400, JSON.stringify(payload));
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const e = openAIError(res.body);
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.code, code, JSON.stringify(payload));
    assert.equal(e.param, param, JSON.stringify(payload));
  }
  const notUtf8 = await post(app, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) as unknown as string);
  assert.equal(notUtf8.statusCode, 400);
  assert.equal(openAIError(notUtf8.body).message, 'the request body is not valid UTF-8');
  assert.equal(engine.requests.length, 0);
  assert.equal(outbox.depth, 0);
});

test('an unknown model is a 404 with OpenAI’s model_not_found', async () => {
  const { app } = await chatApp();
  const res = await post(app, { ...hi, model: 'gpt-9' });
  assert.equal(res.statusCode, 404);
  assertOpenAIError(res.body, {
    message: 'The model `gpt-9` does not exist',
    type: 'invalid_request_error',
    code: 'model_not_found',
    param: 'model',
  });
});

test('with API keys on, a call without a key is a 401 in OpenAI’s error shape', async () => {
  const { app } = await chatApp(scriptedEngine(), { apiKeys: ['sk-1:carol'] });
  const res = await post(app, hi);
  assert.equal(res.statusCode, 401);
  assert.equal(openAIError(res.body).code, 'TS_ERR_UNAUTHORIZED');
  assert.equal((await post(app, hi, { authorization: 'Bearer sk-1' })).statusCode, 200);
});

test('an engine failure is an OpenAI error with its status, in the body or in the stream, and no Turn', async () => {
  const fail = new TurnstreamError(ErrorCodes.UPSTREAM, 'the upstream answered 500');
  const { app, outbox } = await chatApp(scriptedEngine({ fail }));
  const plain = await post(app, hi);
  assert.equal(plain.statusCode, 502);
  assertOpenAIError(plain.body, { message: 'the upstream answered 500', type: 'server_error', code: 'TS_ERR_UPSTREAM' });
  const streamed = await post(app, { ...hi, stream: true });
  assert.equal(streamed.statusCode, 200, 'headers are sent before the engine fails');
  const events = streamed.body.split('\n\n').filter(Boolean);
  assert.equal(events.at(-1), 'data: [DONE]');
  assert.equal(openAIError(events.at(-2)!.replace(/^data: /, '')).code, 'TS_ERR_UPSTREAM');
  assert.equal(outbox.depth, 0);
});

test('beyond the generation slots and the queue a call is a 429 with Retry-After', async () => {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const admission = new Admission({ maxConcurrent: 1, maxQueue: 0 });
  const { app } = await chatApp(scriptedEngine({ gate }), { admission });
  const first = post(app, hi);
  await waitFor('the first call holds the only slot', () => admission.running === 1);
  const second = await post(app, hi);
  assert.equal(second.statusCode, 429);
  assert.ok(Number(second.headers['retry-after']) >= 1);
  assert.equal(openAIError(second.body).type, 'rate_limit_error');
  open();
  assert.equal((await first).statusCode, 200);
});

test('a retried call with the same Idempotency-Key in the same session keeps its turn id', async () => {
  const { app } = await chatApp();
  const headers = { 'x-session-id': 'sess-2', 'idempotency-key': 'k-1' };
  const a = await post(app, hi, headers);
  const b = await post(app, hi, headers);
  assert.equal(a.headers['x-turn-id'], b.headers['x-turn-id']);
  assert.notEqual((await post(app, hi, { 'x-session-id': 'sess-2' })).headers['x-turn-id'], a.headers['x-turn-id']);
});

/** The Turns a call left in the outbox (sent to a collector instead of Kafka). */
async function turnsOf(outbox: Outbox): Promise<Turn[]> {
  const turns: Turn[] = [];
  outbox.setSender(async (records) => {
    for (const r of records) if (r.topic === 'turns') turns.push(r.value as Turn);
  });
  assert.ok(await outbox.flush(), 'the outbox drained');
  return turns;
}

test('n: 3 — three choices, each generated with its own seed and captured as its own Turn in a session of its own', async () => {
  const engine = scriptedEngine();
  const { app, outbox } = await chatApp(engine);
  const res = await post(app, { ...hi, n: 3, seed: 40 }, { 'x-session-id': 'sess-n' });
  assert.equal(res.statusCode, 200);
  const body = res.json();
  assert.deepEqual(
    body.choices.map((c: { index: number; message: { content: string } }) => [c.index, c.message.content]),
    [
      [0, 'Hello'],
      [1, 'Hello'],
      [2, 'Hello'],
    ],
  );
  assert.deepEqual(body.usage, { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 }, 'the prompt counts once');
  assert.deepEqual(
    engine.requests.map((r) => r.seed),
    [40, 41, 42],
  );
  const ids = String(res.headers['x-turn-ids']).split(',');
  assert.equal(ids.length, 3);
  assert.equal(ids[0], res.headers['x-turn-id']);
  assert.equal(new Set(ids).size, 3);
  const turns = (await turnsOf(outbox)).sort((a, b) => (a.choiceIndex ?? 0) - (b.choiceIndex ?? 0));
  assert.deepEqual(
    turns.map((t) => [t.choiceIndex, t.turnId, t.sessionId, t.sampling.seed]),
    [
      [0, ids[0], 'sess-n', 40],
      [1, ids[1], 'sess-n~1', 41],
      [2, ids[2], 'sess-n~2', 42],
    ],
  );
  assert.deepEqual(
    turns.map((t) => t.sessionSource),
    ['HEADER', 'GENERATED', 'GENERATED'],
  );
  // A retry with the same Idempotency-Key gets the same turn ids for every choice.
  const again = await post(app, { ...hi, n: 3, seed: 40 }, { 'x-session-id': 'sess-n', 'idempotency-key': 'k-n' });
  const twice = await post(app, { ...hi, n: 3, seed: 40 }, { 'x-session-id': 'sess-n', 'idempotency-key': 'k-n' });
  assert.equal(again.headers['x-turn-ids'], twice.headers['x-turn-ids']);
});

test('n: 2 streamed — each chunk names its choice; each choice starts with its role and ends with its finish reason', async () => {
  const { app } = await chatApp();
  const res = await post(app, { ...hi, n: 2, stream: true, stream_options: { include_usage: true } });
  assert.equal(res.statusCode, 200);
  const events = res.body.split('\n\n').filter(Boolean);
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
  for (const index of [0, 1]) {
    const mine = chunks.filter((c) => c.choices[0]?.index === index);
    assert.deepEqual(mine[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.equal(mine.map((c) => c.choices[0].delta.content ?? '').join(''), 'Hello');
    assert.equal(mine.at(-1).choices[0].finish_reason, 'stop');
  }
  assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
});

test('a choice that fails fails the call: the others are aborted and no Turn is recorded', async () => {
  let calls = 0;
  const engine = scriptedEngine();
  const failing = {
    ...engine,
    complete: async (req: ChatRequest, call: EngineCallOptions) => {
      if (calls++ === 1) throw new TurnstreamError(ErrorCodes.UPSTREAM, 'the second choice broke');
      await new Promise((resolve) => call.signal.addEventListener('abort', resolve, { once: true }));
      return engine.complete(req, call);
    },
  };
  const { app, outbox } = await chatApp(failing as ScriptedEngine);
  const res = await post(app, { ...hi, n: 2 });
  assert.equal(res.statusCode, 502);
  assert.equal(openAIError(res.body).message, 'the second choice broke');
  assert.equal(outbox.depth, 0);
});

test('inter-token latency: one observation per choice of two tokens or more, streamed or not; none for a one-token reply', async () => {
  const series = async (metrics: GatewayMetrics) => {
    const text = (await metrics.render()).body;
    const count = /^turnstream_gateway_inter_token_latency_seconds_count\{[^}]*engine="builtin"[^}]*\} (\d+)$/m.exec(text);
    const sum = /^turnstream_gateway_inter_token_latency_seconds_sum\{[^}]*engine="builtin"[^}]*\} (\S+)$/m.exec(text);
    return { count: Number(count?.[1] ?? 0), sum: Number(sum?.[1] ?? 0) };
  };
  const four = await chatApp(scriptedEngine({ answer: ['a', 'b', 'c', 'd'] }));
  assert.equal((await post(four.app, { ...hi, n: 2 })).statusCode, 200);
  assert.equal((await post(four.app, { ...hi, stream: true })).statusCode, 200);
  const seen = await series(four.metrics);
  assert.equal(seen.count, 3, 'two choices, then one streamed');
  assert.ok(seen.sum >= 0 && Number.isFinite(seen.sum), String(seen.sum));
  const one = await chatApp(scriptedEngine({ answer: ['a'] }));
  assert.equal((await post(one.app, hi)).statusCode, 200);
  assert.equal((await series(one.metrics)).count, 0, 'a single token has no gap');
});
