/**
 * Proxy mode against a small fake upstream started here: tools and tool calls pass through
 * (streamed tool-call deltas included), turnstream's body fields never reach the upstream,
 * log-probs are asked for and recorded, and token ids only when the upstream gives them; a
 * client's own logprobs request passes through and is answered with the upstream's log-probs,
 * unchanged, while the ones only the gateway asked for never reach the client.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import type { Turn } from '../../../schemas/index.ts';
import { startGateway, tempHome, type StartedGateway } from '../../integration/gateway/support.ts';
import { waitFor } from '../../support/wait-for.ts';

/** What the fake upstream returns as `logprobs.content` (with a vendor field, to show it is passed on as is). */
function upstreamLogprobs(withIds: boolean, top: number): Array<Record<string, unknown>> {
  const alt = (token: string, logprob: number) => ({ token, logprob, bytes: [...Buffer.from(token)] });
  return [
    {
      token: withIds ? 'token_id:11' : 'Hel',
      logprob: -0.1,
      bytes: [72, 101, 108],
      top_logprobs: [alt('Hel', -0.1), alt('Hi', -2.5), alt('Hey', -3)].slice(0, top),
      vendor_rank: 1,
    },
    {
      token: withIds ? 'token_id:12' : 'lo',
      logprob: -0.2,
      bytes: [108, 111],
      top_logprobs: [alt('lo', -0.2), alt('p', -1.9), alt('!', -4)].slice(0, top),
      vendor_rank: 1,
    },
  ];
}

/** What the gateway sends its upstream, as the fake reads it; every other field as sent. */
interface UpstreamBody {
  messages: Array<{ role: string; content: string }>;
  stream?: boolean;
  top_logprobs?: number;
  [field: string]: unknown;
}

let upstream: Server;
let seen: Array<Record<string, unknown>> = [];
let home: Awaited<ReturnType<typeof tempHome>>;
let g: StartedGateway;
let client: OpenAI;

const read = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let s = '';
    req.on('data', (c) => (s += c));
    req.on('end', () => resolve(s));
  });

before(async () => {
  upstream = createServer(async (req, res) => {
    if (req.url === '/v1/models')
      return void res.end(JSON.stringify({ object: 'list', data: [{ id: 'up-model', object: 'model', created: 0, owned_by: 'x' }] }));
    const body = JSON.parse(await read(req)) as UpstreamBody;
    seen.push(body);
    const last = body.messages.at(-1)?.content ?? '';
    if (last === 'fail') {
      res.writeHead(400, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: { message: 'bad tool schema' } }));
    }
    const wantTool = last.includes('tool');
    const withIds = last.includes('ids');
    const lp = upstreamLogprobs(withIds, body.top_logprobs ?? 0);
    if (!body.stream) {
      res.setHeader('content-type', 'application/json');
      return void res.end(
        JSON.stringify({
          id: 'up-1',
          object: 'chat.completion',
          model: 'up-model',
          ...(withIds ? { prompt_token_ids: [1, 2, 3] } : {}),
          choices: [
            wantTool
              ? {
                  index: 0,
                  message: {
                    role: 'assistant',
                    content: null,
                    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }],
                  },
                  finish_reason: 'tool_calls',
                  logprobs: null,
                }
              : { index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop', logprobs: { content: lp } },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        }),
      );
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    const c = (delta: unknown, finish: string | null = null, logprobs: unknown = null) => ({
      id: 'up-1',
      object: 'chat.completion.chunk',
      model: 'up-model',
      choices: [{ index: 0, delta, finish_reason: finish, logprobs }],
    });
    send(c({ role: 'assistant', content: '' }));
    if (wantTool) {
      send(c({ tool_calls: [{ index: 0, id: 'call_9', type: 'function', function: { name: 'ls', arguments: '' } }] }));
      send(c({ tool_calls: [{ index: 0, function: { arguments: '{"dir":' } }] }));
      send(c({ tool_calls: [{ index: 0, function: { arguments: '"/tmp"}' } }] }));
      send(c({}, 'tool_calls'));
    } else {
      send(c({ content: 'Hel' }, null, { content: [lp[0]] }));
      send(c({ content: 'lo' }, null, { content: [lp[1]] }));
      send(c({}, 'stop'));
    }
    send({
      id: 'up-1',
      object: 'chat.completion.chunk',
      model: 'up-model',
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  home = await tempHome('proxy');
  g = await startGateway({ home: home.dir, upstream: { baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1` } });
  client = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => {
  await g?.gw.stop();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await home?.cleanup();
});

/** The turns this gateway put in its outbox, read from the file. */
async function outboxTurns(): Promise<Turn[]> {
  const { readFile } = await import('node:fs/promises');
  const captured = (await g.gw.metrics.turnsCaptured.get()).values.reduce((n, v) => n + v.value, 0);
  const read = async () =>
    (await readFile(`${home.dir}/outbox/outbox.jsonl`, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { topic: string; value: Turn })
      .filter((r) => r.topic === 'turns')
      .map((r) => r.value);
  return waitFor('every captured turn in the outbox file', async () => {
    const turns = await read();
    return turns.length >= captured && turns;
  });
}

/** The captured turn of a reply (`chatcmpl-<turnId>`), or the last one; the test fails when it is missing. */
async function outboxTurn(replyId?: string): Promise<Turn> {
  const turns = await outboxTurns();
  const t = replyId === undefined ? turns.at(-1) : turns.find((x) => `chatcmpl-${x.turnId}` === replyId);
  assert.ok(t, `the turn of ${replyId ?? 'the last reply'} in the outbox`);
  return t;
}

test('non-stream: answer passed through, non-standard fields stripped, logprobs requested, untokenized turn', async () => {
  seen = [];
  const r = await client.chat.completions.create({
    model: 'up-model',
    messages: [{ role: 'user', content: 'hi' }],
    session_id: 'p-1',
    turn_type: 'side',
    session_done: true,
  } as never);
  assert.equal(r.choices[0].message.content, 'Hello');
  assert.equal(seen.length, 1);
  for (const k of ['session_id', 'turn_type', 'session_done']) assert.ok(!(k in seen[0]), `${k} not sent upstream`);
  assert.equal(seen[0].logprobs, true);
  const t = await outboxTurn(r.id);
  assert.equal(t.sessionId, 'p-1');
  assert.equal(t.turnType, 'SIDE');
  assert.equal(t.sessionDone, true);
  assert.deepEqual(t.responseLogprobs, [-0.1, -0.2]);
  assert.equal(t.tokenized, false);
  assert.deepEqual(t.responseTokenIds, []);
  assert.equal(t.policyModelId, 'up-model');
});

test('token ids are recorded when the upstream returns them', async () => {
  const r = await client.chat.completions.create({ model: 'up-model', messages: [{ role: 'user', content: 'ids please' }] });
  const t = await outboxTurn(r.id);
  assert.equal(t.tokenized, true);
  assert.deepEqual(t.responseTokenIds, [11, 12]);
  assert.deepEqual(t.promptTokenIds, [1, 2, 3]);
});

test('tools pass through; tool calls come back, streamed as deltas too', async () => {
  const tools: OpenAI.ChatCompletionTool[] = [
    { type: 'function', function: { name: 'ls', parameters: { type: 'object', properties: { dir: { type: 'string' } } } } },
  ];
  const r = await client.chat.completions.create({
    model: 'up-model',
    messages: [{ role: 'user', content: 'use a tool' }],
    tools,
    tool_choice: 'auto',
  });
  assert.deepEqual(seen.at(-1)!.tools, tools);
  assert.equal(seen.at(-1)!.tool_choice, 'auto');
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  const call = r.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
  assert.equal(call.function.name, 'ls');
  assert.equal(call.function.arguments, '{"dir":"."}');

  const stream = await client.chat.completions.create({
    model: 'up-model',
    messages: [{ role: 'user', content: 'stream a tool' }],
    tools,
    stream: true,
  });
  let args = '';
  let name = '';
  let id = '';
  let finish = '';
  for await (const c of stream) {
    const tc = c.choices[0]?.delta?.tool_calls?.[0];
    if (tc?.function?.name) name += tc.function.name;
    if (tc?.function?.arguments) args += tc.function.arguments;
    if (tc?.id) id = tc.id;
    if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
    id ||= '';
  }
  assert.equal(name, 'ls');
  assert.equal(args, '{"dir":"/tmp"}');
  assert.equal(id, 'call_9');
  assert.equal(finish, 'tool_calls');
  const t = await outboxTurn();
  assert.deepEqual(t.response.toolCalls, [{ id: 'call_9', type: 'function', name: 'ls', arguments: '{"dir":"/tmp"}' }]);
  assert.equal(t.toolsJson, JSON.stringify(tools));
});

test('streamed text and an upstream 400 surface correctly', async () => {
  const stream = await client.chat.completions.create({
    model: 'up-model',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = 0;
  for await (const c of stream) {
    text += c.choices[0]?.delta?.content ?? '';
    if (c.usage) usage = c.usage.total_tokens;
  }
  assert.equal(text, 'Hello');
  assert.equal(usage, 5);
  await assert.rejects(
    client.chat.completions.create({ model: 'up-model', messages: [{ role: 'user', content: 'fail' }] }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && /bad tool schema/.test(e.message),
  );
  const models = await client.models.list();
  assert.deepEqual(
    models.data.map((m) => m.id),
    ['up-model'],
  );
});

test("logprobs the client asks for pass through both ways unchanged; the gateway's own are not shown", async () => {
  const asked = await client.chat.completions.create({
    model: 'up-model',
    messages: [{ role: 'user', content: 'hi' }],
    logprobs: true,
    top_logprobs: 2,
  });
  assert.equal(seen.at(-1)!.logprobs, true);
  assert.equal(seen.at(-1)!.top_logprobs, 2, 'top_logprobs reaches the upstream');
  assert.deepEqual(asked.choices[0].logprobs, { content: upstreamLogprobs(false, 2) }, "the upstream's logprobs, unchanged");
  const t = await outboxTurn(asked.id);
  assert.deepEqual(t.responseLogprobs, [-0.1, -0.2], 'still captured');

  for (const extra of [{}, { logprobs: false }]) {
    const plain = await client.chat.completions.create({ model: 'up-model', messages: [{ role: 'user', content: 'hi' }], ...extra });
    assert.equal(seen.at(-1)!.logprobs, true, 'the gateway still asks, for the Turn');
    assert.ok(!('top_logprobs' in seen.at(-1)!));
    assert.equal(plain.choices[0].logprobs, null, 'but the client did not ask');
    const pt = await outboxTurn(plain.id);
    assert.deepEqual(pt.responseLogprobs, [-0.1, -0.2]);
  }
});

test("streamed: each chunk carries the upstream's logprobs when asked, and null when not", async () => {
  const collect = async (body: Record<string, unknown>) => {
    const stream = await client.chat.completions.create({
      model: 'up-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      ...body,
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    const entries: unknown[] = [];
    let chunksWithLogprobs = 0;
    let text = '';
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? '';
      const lp = c.choices[0]?.logprobs;
      if (lp) {
        chunksWithLogprobs++;
        entries.push(...(lp.content ?? []));
      }
    }
    return { entries, chunksWithLogprobs, text };
  };
  const asked = await collect({ logprobs: true, top_logprobs: 3 });
  assert.equal(seen.at(-1)!.top_logprobs, 3);
  assert.equal(asked.text, 'Hello');
  assert.deepEqual(asked.entries, upstreamLogprobs(false, 3));
  assert.equal(asked.chunksWithLogprobs, 2, 'one upstream chunk, one client chunk');
  const t = await outboxTurn();
  assert.deepEqual(t.responseLogprobs, [-0.1, -0.2]);

  const plain = await collect({});
  assert.equal(seen.at(-1)!.logprobs, true);
  assert.equal(plain.text, 'Hello');
  assert.equal(plain.chunksWithLogprobs, 0, 'the log-probs the gateway asked for stay in the Turn');
  assert.deepEqual((await outboxTurn()).responseLogprobs, [-0.1, -0.2]);
});

test('n: 2 and fields the upstream decides on — one upstream call per choice (seed + i), every other field forwarded as sent', async () => {
  seen = [];
  const { data: res, response } = await client.chat.completions
    .create({
      model: 'up-model',
      messages: [{ role: 'user', content: 'two please' }],
      n: 2,
      seed: 10,
      presence_penalty: 0.5,
      response_format: { type: 'json_object' },
      reasoning_effort: 'low',
      // A field in no OpenAI reference: the upstream (vLLM, say) decides.
      ...({ top_k: 4 } as object),
    })
    .withResponse();
  assert.deepEqual(
    res.choices.map((c) => [c.index, c.message.content]),
    [
      [0, 'Hello'],
      [1, 'Hello'],
    ],
  );
  assert.equal(seen.length, 2);
  assert.deepEqual(seen.map((b) => b.seed).sort(), [10, 11]);
  for (const b of seen) {
    assert.ok(!('n' in b), 'each upstream call is one choice');
    assert.equal(b.presence_penalty, 0.5);
    assert.deepEqual(b.response_format, { type: 'json_object' });
    assert.equal(b.reasoning_effort, 'low');
    assert.equal(b.top_k, 4);
  }
  const ids = response.headers.get('x-turn-ids')!.split(',');
  const turns = (await outboxTurns()).filter((t) => ids.includes(t.turnId));
  assert.deepEqual(
    turns.map((t) => [t.turnId, t.choiceIndex]).sort(),
    [
      [ids[0], 0],
      [ids[1], 1],
    ].sort(),
  );
});
