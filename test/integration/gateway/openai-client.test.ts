/**
 * The official `openai` npm client against the gateway (built-in tiny model), streaming and
 * not, log-probs included, `n` choices, a seed, and `/v1/completions`, with the turns it produced
 * read back from Kafka.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import type { Turn } from '../../../schemas/index.ts';
import { startKafkaGateway, type KafkaGateway } from '../../support/kafka-gateway.ts';
import { waitFor } from '../../support/wait-for.ts';
import { TopicCollector } from './support.ts';

let g: KafkaGateway;
let client: OpenAI;
let turns: TopicCollector<'turns'>;

before(async () => {
  g = await startKafkaGateway('openai', { apiKeys: ['sk-test:alice'] });
  client = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  turns = await TopicCollector.start(g.k.kafka, g.k.codecs, 'turns');
});

after(async () => {
  await turns?.stop();
  await g?.stop();
});

test('non-streaming completion: the id is the turn id, usage counts the tokens, X-Turn-Id is sent', async () => {
  const { data, response } = await client.chat.completions
    .create(
      { model: 'turnstream-tiny', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 8, seed: 7 },
      { headers: { 'X-Session-Id': 'oa-1' } },
    )
    .withResponse();
  const turnId = response.headers.get('x-turn-id');
  assert.ok(turnId);
  assert.equal(data.id, `chatcmpl-${turnId}`);
  assert.equal(data.object, 'chat.completion');
  assert.equal(data.choices.length, 1);
  assert.equal(data.choices[0].message.role, 'assistant');
  assert.equal(typeof data.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(data.choices[0].finish_reason));
  assert.ok(data.usage!.completion_tokens >= 1 && data.usage!.completion_tokens <= 8);
  assert.equal(data.usage!.total_tokens, data.usage!.prompt_tokens + data.usage!.completion_tokens);

  const [ev] = await turns.waitFor(1, 30_000, 0);
  const t = ev.value;
  assert.equal(ev.key, 'oa-1');
  assert.equal(t.turnId, turnId);
  assert.equal(t.sessionId, 'oa-1');
  assert.equal(t.sessionSource, 'HEADER');
  assert.equal(t.userId, 'alice', 'the API key user is the default user id');
  assert.equal(t.turnType, 'MAIN');
  assert.equal(t.response.content, data.choices[0].message.content);
  assert.equal(t.responseTokenIds.length, data.usage!.completion_tokens);
  assert.equal(t.responseLogprobs.length, t.responseTokenIds.length);
  assert.equal(t.promptTokenIds.length, data.usage!.prompt_tokens);
  assert.equal(t.tokenized, true);
  assert.equal(t.sampling.seed, 7);
  assert.equal(t.policyVersion, 0);
});

test('streaming completion: real deltas, then a usage chunk, and the same answer recorded', async () => {
  const stream = await client.chat.completions.create({
    model: 'turnstream-tiny',
    messages: [
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Tell me' },
          { type: 'text', text: 'a story' },
        ],
      },
    ],
    max_completion_tokens: 12,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let usage: OpenAI.CompletionUsage | null | undefined;
  let id = '';
  let finish: string | null = null;
  for await (const c of stream) {
    chunks++;
    id = c.id;
    if (c.choices[0]?.delta?.content) text += c.choices[0].delta.content;
    if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
    if (c.usage) usage = c.usage;
  }
  assert.ok(usage, 'a final usage chunk');
  assert.ok(chunks >= 3, `several chunks (got ${chunks})`);
  assert.ok(finish);
  const events = await turns.waitFor(2, 30_000, 0);
  const t = events.find((e) => `chatcmpl-${e.value.turnId}` === id)!.value;
  assert.ok(t, 'the streamed turn is on the topic');
  assert.equal(t.response.content, text);
  assert.equal(t.responseTokenIds.length, usage!.completion_tokens);
  assert.equal(t.responseLogprobs.length, usage!.completion_tokens);
  assert.equal(t.requestMessages[1].content, 'Tell me\na story', 'content parts are flattened');
  assert.equal(t.sessionSource, 'GENERATED');
});

test('models, bad key, and a bad request through the client surface as OpenAI errors', async () => {
  const models = await client.models.list();
  assert.deepEqual(
    models.data.map((m) => m.id),
    ['turnstream-tiny'],
  );
  const bad = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
    assert.ok(err instanceof OpenAI.AuthenticationError);
    assert.equal(err.status, 401);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'x', messages: [], max_tokens: 4 }), (err: unknown) => {
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal((err as InstanceType<typeof OpenAI.BadRequestError>).param, 'messages');
    return true;
  });
});

test('logprobs / top_logprobs: the client parses them, streamed and not, and they match the Turn', async () => {
  const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
    model: 'turnstream-tiny',
    messages: [{ role: 'user', content: 'How sure are you?' }],
    max_tokens: 8,
    seed: 11,
    logprobs: true,
    top_logprobs: 4,
  };
  const { data, response } = await client.chat.completions.create(request).withResponse();
  const content = data.choices[0].logprobs?.content;
  assert.ok(content, 'choices[0].logprobs.content');
  assert.equal(data.choices[0].logprobs!.refusal, null);
  assert.equal(content.length, data.usage!.completion_tokens);
  for (const e of content) {
    assert.equal(typeof e.token, 'string');
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 4);
  }
  const turnId = response.headers.get('x-turn-id');
  const t = (await turns.waitFor(3, 30_000, 0)).find((ev) => ev.value.turnId === turnId)!.value;
  assert.deepEqual(
    content.map((e) => Math.fround(e.logprob)),
    t.responseLogprobs,
  );

  const stream = await client.chat.completions.create({ ...request, stream: true });
  const streamed: OpenAI.ChatCompletionTokenLogprob[] = [];
  for await (const c of stream) streamed.push(...(c.choices[0]?.logprobs?.content ?? []));
  assert.deepEqual(streamed, content, 'the same seed streams the same tokens and numbers');

  await assert.rejects(
    client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], top_logprobs: 3 }),
    (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === 'top_logprobs',
  );
});

/** The Turns of these ids once they are on the topic. */
async function turnsById(ids: string[]): Promise<Turn[]> {
  await waitFor('the turns reached Kafka', () => ids.every((id) => turns.events.some((e) => e.value.turnId === id)), { timeoutMs: 30_000 });
  return ids.map((id) => turns.events.find((e) => e.value.turnId === id)!.value);
}

test('n: 3 — three choices, and three Turns on Kafka, each with its own token ids and log-probs', async () => {
  const { data, response } = await client.chat.completions
    .create(
      { model: 'turnstream-tiny', messages: [{ role: 'user', content: 'Name three colours' }], max_tokens: 8, seed: 21, n: 3 },
      { headers: { 'X-Session-Id': 'oa-n' } },
    )
    .withResponse();
  assert.deepEqual(
    data.choices.map((c) => c.index),
    [0, 1, 2],
  );
  const ids = response.headers.get('x-turn-ids')!.split(',');
  assert.equal(ids[0], response.headers.get('x-turn-id'));
  assert.equal(data.id, `chatcmpl-${ids[0]}`);
  const t = await turnsById(ids);
  assert.deepEqual(
    t.map((x) => [x.choiceIndex, x.sessionId, x.sampling.seed]),
    [
      [0, 'oa-n', 21],
      [1, 'oa-n~1', 22],
      [2, 'oa-n~2', 23],
    ],
  );
  for (const [i, turn] of t.entries()) {
    assert.equal(turn.response.content, data.choices[i].message.content);
    assert.ok(turn.responseTokenIds.length >= 1);
    assert.equal(turn.responseLogprobs.length, turn.responseTokenIds.length);
    assert.deepEqual(turn.promptTokenIds, t[0].promptTokenIds, 'one prompt');
  }
  assert.equal(
    data.usage!.completion_tokens,
    t.reduce((s, x) => s + x.responseTokenIds.length, 0),
  );
  assert.equal(data.usage!.prompt_tokens, t[0].promptTokenIds.length, 'the prompt counts once');
});

test('the same seed twice gives the same text', async () => {
  const ask = () =>
    client.chat.completions.create({
      model: 'turnstream-tiny',
      messages: [{ role: 'user', content: 'Say something random' }],
      max_tokens: 16,
      temperature: 1,
      seed: 1234,
    });
  const [a, b] = [await ask(), await ask()];
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.ok(a.choices[0].message.content);
});

test('/v1/completions with the official client: text, streamed or not, legacy log-probs, and a Turn on Kafka', async () => {
  const { data, response } = await client.completions
    .create({ model: 'turnstream-tiny', prompt: 'Once upon a time', max_tokens: 8, seed: 5, logprobs: 2, echo: false })
    .withResponse();
  assert.equal(data.object, 'text_completion');
  const turnId = response.headers.get('x-turn-id')!;
  assert.equal(data.id, `cmpl-${turnId}`);
  const [choice] = data.choices;
  assert.equal(typeof choice.text, 'string');
  assert.ok(['stop', 'length'].includes(choice.finish_reason));
  const lp = choice.logprobs!;
  assert.equal(lp.tokens!.length, data.usage!.completion_tokens);
  assert.ok(lp.top_logprobs!.every((top) => Object.keys(top).length <= 2));
  const [turn] = await turnsById([turnId]);
  assert.equal(turn.rawPrompt, true);
  assert.equal(turn.turnType, 'SIDE', 'a raw prompt is recorded, not trained on, unless the call says main');
  assert.equal(turn.requestMessages[0].content, 'Once upon a time');
  assert.equal(turn.response.content, choice.text);
  assert.deepEqual(
    lp.token_logprobs!.map((x) => Math.fround(x)),
    turn.responseLogprobs,
  );

  const stream = await client.completions.create({
    model: 'turnstream-tiny',
    prompt: 'Once upon a time',
    max_tokens: 8,
    seed: 5,
    stream: true,
  });
  let text = '';
  for await (const c of stream) text += c.choices[0]?.text ?? '';
  assert.equal(text, choice.text, 'the same seed streams the same text');
});
