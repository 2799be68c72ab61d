/**
 * `POST /v1/completions` through `app.inject()` with a scripted engine: OpenAI's
 * `text_completion` shape, several prompts × n choices in order, `echo`, the legacy `logprobs`
 * shape, streaming, and one Turn per choice (its prompt as one user message, `rawPrompt`, side
 * unless the call says main).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { completions } from '../../../gateway/completions.ts';
import type { Turn } from '../../../schemas/index.ts';
import type { Outbox } from '../../../streams/index.ts';
import { openAIError, routeApp, scriptedEngine, type ScriptedEngine } from './route-app.ts';

const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of closers) await close();
});

async function completionsApp(engine: ScriptedEngine = scriptedEngine()): Promise<{ app: FastifyInstance; outbox: Outbox }> {
  const { app, outbox, close } = await routeApp([completions], engine);
  closers.push(close);
  return { app, outbox };
}

const post = (app: FastifyInstance, payload: object, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/v1/completions', headers: { 'content-type': 'application/json', ...headers }, payload });

async function turnsOf(outbox: Outbox): Promise<Turn[]> {
  const turns: Turn[] = [];
  outbox.setSender(async (records) => {
    for (const r of records) if (r.topic === 'turns') turns.push(r.value as Turn);
  });
  assert.ok(await outbox.flush(), 'the outbox drained');
  return turns.sort((a, b) => (a.choiceIndex ?? 0) - (b.choiceIndex ?? 0));
}

test('a text completion in OpenAI’s shape; each prompt × n is a choice, in order, and a Turn of its own', async () => {
  const engine = scriptedEngine({ answer: [' there', '!'] });
  const { app, outbox } = await completionsApp(engine);
  const res = await post(app, { prompt: ['Hi', 'Yo'], n: 2, max_tokens: 5, seed: 9 }, { 'x-session-id': 'c-1' });
  assert.equal(res.statusCode, 200);
  const turnId = String(res.headers['x-turn-id']);
  const body = res.json();
  assert.equal(body.id, `cmpl-${turnId}`);
  assert.equal(body.object, 'text_completion');
  assert.equal(body.model, 'scripted');
  assert.deepEqual(
    body.choices,
    [0, 1, 2, 3].map((index) => ({ text: ' there!', index, logprobs: null, finish_reason: 'stop' })),
  );
  assert.deepEqual(body.usage, { prompt_tokens: 6, completion_tokens: 8, total_tokens: 14 }, 'each prompt counts once');
  assert.deepEqual(
    engine.requests.map((r) => [r.prompt, r.seed, r.maxTokens]),
    [
      [{ text: 'Hi' }, 9, 5],
      [{ text: 'Hi' }, 10, 5],
      [{ text: 'Yo' }, 9, 5],
      [{ text: 'Yo' }, 10, 5],
    ],
  );
  const turns = await turnsOf(outbox);
  assert.deepEqual(
    turns.map((t) => [t.choiceIndex, t.sessionId, t.rawPrompt, t.turnType, t.requestMessages[0].content, t.response.content]),
    [
      [0, 'c-1', true, 'SIDE', 'Hi', ' there!'],
      [1, 'c-1~1', true, 'SIDE', 'Hi', ' there!'],
      [2, 'c-1~2', true, 'SIDE', 'Yo', ' there!'],
      [3, 'c-1~3', true, 'SIDE', 'Yo', ' there!'],
    ],
  );
  assert.deepEqual(
    String(res.headers['x-turn-ids']).split(','),
    turns.map((t) => t.turnId),
  );
});

test('echo puts the prompt first; logprobs come in the legacy shape, with text offsets into the returned text', async () => {
  const { app, outbox } = await completionsApp(scriptedEngine({ answer: [' wor', 'ld'] }));
  const res = await post(app, { prompt: 'hello', echo: true, logprobs: 1 }, { 'x-turn-type': 'main' });
  assert.equal(res.statusCode, 200);
  const [choice] = res.json().choices;
  assert.equal(choice.text, 'hello world');
  assert.deepEqual(choice.logprobs, {
    tokens: [' wor', 'ld'],
    token_logprobs: [-0.5, -0.5],
    top_logprobs: [{ ' wor': -0.5 }, { ld: -0.5 }],
    text_offset: [5, 9],
  });
  const [turn] = await turnsOf(outbox);
  assert.equal(turn.turnType, 'MAIN', 'X-Turn-Type: main makes a completion trainable');
});

test('streamed: the echoed prompt, each piece, the finish reason, the usage, then [DONE]', async () => {
  const { app } = await completionsApp(scriptedEngine({ answer: ['a', 'b'] }));
  const res = await post(app, { prompt: [[7, 8]], echo: true, stream: true, stream_options: { include_usage: true } });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
  const events = res.body.split('\n\n').filter(Boolean);
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
  assert.ok(chunks.every((c) => c.object === 'text_completion' && c.id === `cmpl-${res.headers['x-turn-id']}`));
  assert.deepEqual(
    chunks.slice(0, -1).map((c) => [c.choices[0].text, c.choices[0].finish_reason]),
    [
      ['7 8', null],
      ['a', null],
      ['b', null],
      ['', 'stop'],
    ],
  );
  assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
});

test('a bad request is a 400 in OpenAI’s shape naming the field; an unknown model a 404', async () => {
  const engine = scriptedEngine();
  const { app, outbox } = await completionsApp(engine);
  for (const [payload, param] of [
    [{ prompt: 'x', logprobs: 9 }, 'logprobs'],
    [{}, 'prompt'],
    [{ prompt: 'x', max_tokens: 0 }, 'max_tokens'],
  ] as const) {
    const res = await post(app, payload);
    assert.equal(res.statusCode, 400);
    assert.equal(openAIError(res.body).param, param);
  }
  assert.equal((await post(app, { prompt: 'x', model: 'gpt-9' })).statusCode, 404);
  assert.equal(engine.requests.length, 0);
  assert.equal(outbox.depth, 0);
});
