/**
 * `logprobs` / `top_logprobs` with the built-in tiny model, on the wire (non-streamed and SSE):
 * one entry per completion token, the same log-probs the Turn on Kafka records, alternatives
 * sorted, and `bytes` that rebuild the answer text.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Turn } from '../../../schemas/index.ts';
import { startKafkaGateway, type KafkaGateway } from '../../support/kafka-gateway.ts';
import { TopicCollector } from './support.ts';
import { waitFor } from '../../support/wait-for.ts';

interface Top {
  token: string;
  logprob: number;
  bytes: number[] | null;
}
interface Entry extends Top {
  top_logprobs: Top[];
}
interface Logprobs {
  content: Entry[];
  refusal: null;
}
interface Completion {
  choices: Array<{ message: { content: string }; logprobs: Logprobs | null }>;
  usage: { completion_tokens: number };
}
interface Chunk {
  choices: Array<{ delta: { content?: string }; logprobs: Logprobs | null }>;
  usage?: { completion_tokens: number } | null;
}

let g: KafkaGateway;
let turns: TopicCollector<'turns'>;

before(async () => {
  g = await startKafkaGateway('logprobs');
  turns = await TopicCollector.start(g.k.kafka, g.k.codecs, 'turns');
});

after(async () => {
  await turns?.stop();
  await g?.stop();
});

const messages = [{ role: 'user', content: 'Tell me about the sea' }];

async function post(body: object): Promise<Response> {
  const res = await fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res;
}

async function turnOf(turnId: string): Promise<Turn> {
  const ev = await waitFor(`turn ${turnId} to reach the topic`, () => turns.events.find((e) => e.value.turnId === turnId), {
    timeoutMs: 30_000,
  });
  return ev.value;
}

/** What a user of the log-probs relies on, checked against the captured Turn. */
function checkEntries(entries: Entry[], turn: Turn, content: string, topN: number): void {
  assert.equal(entries.length, turn.usage.completionTokens, 'one entry per completion token');
  assert.equal(entries.length, turn.responseTokenIds.length);
  const textBytes: number[] = [];
  entries.forEach((e, i) => {
    assert.ok(Number.isFinite(e.logprob) && e.logprob <= 0, `logprob ${e.logprob} ≤ 0`);
    assert.equal(Math.fround(e.logprob), turn.responseLogprobs[i], `token ${i}: the log-prob the Turn recorded`);
    const id = turn.responseTokenIds[i];
    if (id < 256) {
      assert.deepEqual(e.bytes, [id], `token ${i}: its byte`);
      textBytes.push(id);
    } else assert.equal(e.bytes, null, `token ${i}: a special token has no bytes`);
    assert.equal(e.top_logprobs.length, topN);
    for (let j = 1; j < e.top_logprobs.length; j++)
      assert.ok(e.top_logprobs[j - 1].logprob >= e.top_logprobs[j].logprob, 'alternatives sorted');
    if (topN > 0) assert.ok(e.top_logprobs[0].logprob >= e.logprob, 'no alternative is missing above the sampled token');
    const same = e.top_logprobs.find((t) => t.token === e.token);
    if (same) assert.equal(same.logprob, e.logprob);
  });
  assert.equal(new TextDecoder().decode(Uint8Array.from(textBytes)), content, 'the bytes rebuild the answer');
}

test('non-streamed: logprobs.content has every token, its Turn log-prob and N sorted alternatives; absent unless asked', async () => {
  const res = await post({ messages, max_tokens: 14, seed: 5, logprobs: true, top_logprobs: 5 });
  assert.equal(res.status, 200);
  const body = (await res.json()) as Completion;
  const lp = body.choices[0].logprobs!;
  assert.equal(lp.refusal, null);
  assert.deepEqual(Object.keys(lp.content[0]), ['token', 'logprob', 'bytes', 'top_logprobs'], "OpenAI's fields");
  const turn = await turnOf(res.headers.get('x-turn-id')!);
  assert.equal(body.usage.completion_tokens, lp.content.length);
  checkEntries(lp.content, turn, body.choices[0].message.content, 5);

  const plain = (await (await post({ messages, max_tokens: 4 })).json()) as Completion;
  assert.equal(plain.choices[0].logprobs, null);
  const noTop = (await (await post({ messages, max_tokens: 4, logprobs: true })).json()) as Completion;
  assert.ok(noTop.choices[0].logprobs!.content.every((e) => Array.isArray(e.top_logprobs) && e.top_logprobs.length === 0));
});

test('greedy: the answer token is always the most likely alternative', async () => {
  const body = (await (await post({ messages, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 1 })).json()) as Completion;
  for (const e of body.choices[0].logprobs!.content) {
    assert.equal(e.top_logprobs[0].token, e.token);
    assert.equal(e.top_logprobs[0].logprob, e.logprob, 'the log-prob is the policy’s own, not the greedy 0');
  }
});

test('streamed: each chunk carries its token’s entry; all together equal the non-streamed answer for the same seed', async () => {
  const req = { messages, max_tokens: 14, seed: 5, logprobs: true, top_logprobs: 3 };
  const res = await post({ ...req, stream: true, stream_options: { include_usage: true } });
  const frames = (await res.text())
    .split('\n\n')
    .filter((f) => f.startsWith('data: ') && f !== 'data: [DONE]')
    .map((f) => JSON.parse(f.slice(6)) as Chunk);
  const entries: Entry[] = [];
  let text = '';
  let usage: { completion_tokens: number } | null = null;
  for (const f of frames) {
    if (f.usage) usage = f.usage;
    const c = f.choices[0];
    if (!c) continue;
    text += c.delta.content ?? '';
    if (c.logprobs) {
      assert.equal(c.logprobs.content.length, 1, 'one token per chunk');
      assert.equal(c.logprobs.refusal, null);
      entries.push(...c.logprobs.content);
    }
  }
  assert.equal(frames[0].choices[0].logprobs, null, 'the role chunk has none');
  assert.equal(frames.at(-2)!.choices[0].logprobs, null, 'the finish chunk has none');
  assert.equal(entries.length, usage!.completion_tokens);
  const turn = await turnOf(res.headers.get('x-turn-id')!);
  checkEntries(entries, turn, text, 3);

  const whole = (await (await post(req)).json()) as Completion;
  assert.deepEqual(entries, whole.choices[0].logprobs!.content, 'streaming does not change the numbers');
  assert.equal(text, whole.choices[0].message.content);

  const plain = await (await post({ messages, max_tokens: 4, stream: true })).text();
  assert.doesNotMatch(plain, /"logprobs":\{/, 'no logprobs unless asked');
});
