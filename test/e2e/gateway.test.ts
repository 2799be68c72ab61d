/**
 * N calls in two sessions, one naming itself with headers and one not (its session is
 * inferred from the history), give exactly N Turn events on the turns topic, with the right
 * session ids, turn types, user ids and token ids matching the log-probs and the tokens.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { TopicCollector } from '../integration/gateway/support.ts';
import { startKafkaGateway, type KafkaGateway } from '../support/kafka-gateway.ts';

let g: KafkaGateway;

before(async () => {
  g = await startKafkaGateway('e2e', {
    apiKeys: ['sk-bob:bob'],
    // A service (an agent runner) names the user it talks for.
    serviceKeys: ['sk-service'],
  });
});
after(async () => {
  await g?.stop();
});

test('N calls in two sessions (headers / inferred) → exactly N turns with the right fields', async () => {
  const collector = await TopicCollector.start(g.k.kafka, g.k.codecs, 'turns');
  const withHeaders = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'sk-service', maxRetries: 0 });
  const plain = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'sk-bob', maxRetries: 0 });
  const TURNS = 4;
  const expected = new Map<string, { session: string | null; type: 'MAIN' | 'SIDE'; user: string | null; tokens: number; text: string }>();

  // Session A: explicit headers, one side turn (a heartbeat) in the middle, done at the end.
  const histA: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are terse. '.repeat(50) }];
  for (let i = 0; i < TURNS; i++) {
    histA.push({ role: 'user', content: `A question ${i}` });
    const side = i === 2;
    const { data, response } = await withHeaders.chat.completions
      .create(
        { model: 'turnstream-tiny', messages: histA, max_tokens: 10 },
        {
          headers: {
            'X-Session-Id': 'e2e-A',
            'X-Turn-Type': side ? 'side' : 'main',
            'X-User-Id': 'alice',
            ...(i === TURNS - 1 ? { 'X-Session-Done': 'yes' } : {}),
          },
        },
      )
      .withResponse();
    expected.set(response.headers.get('x-turn-id')!, {
      session: 'e2e-A',
      type: side ? 'SIDE' : 'MAIN',
      user: 'alice',
      tokens: data.usage!.completion_tokens,
      text: data.choices[0].message.content ?? '',
    });
    histA.push({ role: 'assistant', content: data.choices[0].message.content });
  }

  // Session B: no headers at all, streaming, content parts, the whole history every turn
  // (OpenClaw-style); the system prompt changes each turn and must not split the session.
  const histB: OpenAI.ChatCompletionMessageParam[] = [];
  let sessionB: string | null = null;
  for (let i = 0; i < TURNS; i++) {
    histB.push({ role: 'user', content: [{ type: 'text', text: `B message ${i}` }] });
    const system: OpenAI.ChatCompletionMessageParam = { role: 'system', content: `Now is turn ${i}.` };
    const { data: stream, response } = await plain.chat.completions
      .create({
        model: 'turnstream-tiny',
        messages: [system, ...histB],
        max_completion_tokens: 10,
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    let text = '';
    let usage = 0;
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? '';
      if (c.usage) usage = c.usage.completion_tokens;
    }
    const sid = response.headers.get('x-session-id')!;
    if (i === 0) sessionB = sid;
    else assert.equal(sid, sessionB, `turn ${i} of B continues the inferred session`);
    expected.set(response.headers.get('x-turn-id')!, { session: sessionB, type: 'MAIN', user: 'bob', tokens: usage, text });
    histB.push({ role: 'assistant', content: text });
  }

  const N = 2 * TURNS;
  const events = await collector.waitFor(N, 60_000, 2000);
  await collector.stop();
  assert.equal(events.length, N, 'exactly N turns');
  for (const { key, value: t } of events) {
    const want = expected.get(t.turnId);
    assert.ok(want, `turn ${t.turnId} was one of ours`);
    assert.equal(t.sessionId, want.session);
    assert.equal(key, t.sessionId, 'keyed by session');
    assert.equal(t.turnType, want.type);
    assert.equal(t.userId, want.user);
    assert.equal(t.response.content, want.text);
    assert.equal(t.responseTokenIds.length, want.tokens, 'one id per generated token');
    assert.equal(t.responseLogprobs.length, t.responseTokenIds.length, 'one log-prob per id');
    assert.ok(t.responseLogprobs.every((lp) => lp <= 0 && Number.isFinite(lp)));
    assert.equal(t.usage.completionTokens, t.responseTokenIds.length);
    assert.equal(t.usage.promptTokens, t.promptTokenIds.length);
    assert.equal(t.tokenized, true);
  }
  const a = events.filter((e) => e.value.sessionId === 'e2e-A').map((e) => e.value);
  const b = events.filter((e) => e.value.sessionId === sessionB).map((e) => e.value);
  assert.equal(a.length, TURNS);
  assert.ok(a.every((t) => t.sessionSource === 'HEADER'));
  assert.deepEqual(
    a.map((t) => t.sessionDone),
    [false, false, false, true],
  );
  assert.ok(
    a.some((t) => t.promptTruncatedTokens > 0),
    'the long system prompt was truncated, not refused',
  );
  assert.equal(b.length, TURNS);
  assert.deepEqual(
    b.map((t) => t.sessionSource),
    ['GENERATED', 'INFERRED', 'INFERRED', 'INFERRED'],
  );

  // Feedback on a turn by its id.
  const last = [...expected.keys()].at(-1)!;
  const fb = await fetch(`${g.url}/v1/feedback`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bob' },
    body: JSON.stringify({ turn_id: last, rating: -1, text: 'wrong' }),
  });
  assert.equal(fb.status, 201);
  const { id, session_id } = (await fb.json()) as { id: string; session_id: string };
  assert.equal(session_id, sessionB);
  const fbs = await TopicCollector.start(g.k.kafka, g.k.codecs, 'feedback');
  const [f] = await fbs.waitFor(1, 30_000, 0);
  await fbs.stop();
  assert.equal(f.value.feedbackId, id);
  assert.equal(f.value.turnId, last);
  assert.equal(f.value.rating, -1);
  assert.equal(f.value.userId, 'bob');
});
