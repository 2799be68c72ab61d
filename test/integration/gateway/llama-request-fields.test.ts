/**
 * The request fields the llama.cpp engine honours, each on a tiny GGUF the test writes (its
 * answers are noise, which is what makes the constraints visible): `response_format` (every
 * answer is JSON that validates against the schema, with and without `logprobs`), the penalties
 * and `logit_bias` (they change what is drawn, and the Turn says its log-probs are not the
 * model's own), `seed`, `stop`, `n` on parallel sequences, `tool_choice: none`, and
 * `/v1/completions` with text or token-id prompts, `echo` and the prompt's log-probs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Ajv } from 'ajv';
import type { Gateway } from '../../../gateway/index.ts';
import type { Turn } from '../../../schemas/index.ts';
import { startTinyLlamaGateway } from '../../support/llama-gateway.ts';
import { waitFor } from '../../support/wait-for.ts';

const CONTEXT = 512;
let dir = '';
let gw: Gateway;
let url = '';
const turns = new Map<string, Turn>();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llama-fields-'));
  ({ gw, url } = await startTinyLlamaGateway(
    dir,
    { architecture: 'llama', seed: 11, contextLength: CONTEXT },
    { contextSize: CONTEXT, parallel: 2 },
  ));
  // The Turns the gateway captures (no Kafka here: read off its outbox).
  gw.outbox.setSender(async (records) => {
    for (const r of records) if (r.topic === 'turns') turns.set((r.value as Turn).turnId, r.value as Turn);
  });
});

after(async () => {
  await gw?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Choice {
  index: number;
  message: { content: string | null };
  finish_reason: string;
  logprobs: { content: Array<{ token: string; logprob: number; top_logprobs: Array<{ token: string; logprob: number }> }> } | null;
}

/** A `/v1/completions` choice (legacy log-probs). */
interface TextChoice {
  text: string;
  finish_reason: string;
  logprobs: {
    tokens: string[];
    token_logprobs: Array<number | null>;
    top_logprobs: Array<Record<string, number> | null>;
    text_offset: number[];
  } | null;
}

interface Answer {
  choices: Array<Choice & TextChoice>;
}

async function call(path: string, body: object): Promise<{ status: number; json: Answer; turnIds: string[] }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as Answer;
  const turnIds = (res.headers.get('x-turn-ids') ?? res.headers.get('x-turn-id') ?? '').split(',').filter(Boolean);
  return { status: res.status, json, turnIds };
}

async function chat(body: object): Promise<{ choices: Choice[]; turns: Turn[] }> {
  const r = await call('/v1/chat/completions', { messages: [{ role: 'user', content: 'Tell me about the sea' }], ...body });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return { choices: r.json.choices, turns: await turnsOf(r.turnIds) };
}

async function turnsOf(ids: string[]): Promise<Turn[]> {
  await waitFor('the turns are captured', () => ids.every((id) => turns.has(id)));
  return ids.map((id) => turns.get(id)!);
}

const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    count: { type: 'integer' },
    ok: { type: 'boolean' },
    mood: { type: 'string', enum: ['calm', 'rough', 'still'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 2 },
    note: { anyOf: [{ type: 'string', maxLength: 8 }, { type: 'null' }] },
  },
  required: ['name', 'count', 'ok', 'mood', 'tags', 'note'],
  additionalProperties: false,
};
const jsonSchema = { type: 'json_schema', json_schema: { name: 'sea', schema, strict: true } };

test('response_format json_schema: every answer is JSON that validates against the schema, with and without logprobs', async () => {
  const validate = new Ajv({ strict: true }).compile(schema);
  for (let seed = 0; seed < 30; seed++) {
    const logprobs = seed % 3 === 0;
    const {
      choices,
      turns: [turn],
    } = await chat({ response_format: jsonSchema, max_tokens: 160, temperature: 1, seed, logprobs });
    const content = choices[0].message.content!;
    assert.equal(choices[0].finish_reason, 'stop', `seed ${seed}: the answer completed: ${content}`);
    assert.ok(validate(JSON.parse(content)), `seed ${seed}: ${content} ${JSON.stringify(validate.errors)}`);
    assert.equal(content, content.trim(), 'the grammar’s closing newlines are not part of the answer');
    if (logprobs)
      assert.ok(choices[0].logprobs!.content.every((e) => e.logprob <= 0 && e.top_logprobs.every((t) => Number.isFinite(t.logprob))));
    assert.equal(turn.exactLogprobs, false, 'a grammar shaped the distribution: not the model’s own log-probs');
    assert.deepEqual(JSON.parse(turn.sampling.responseFormat!), {
      type: 'json_schema',
      name: 'sea',
      description: null,
      schema,
      strict: true,
    });
  }
  const { choices } = await chat({ response_format: { type: 'json_object' }, max_tokens: 160, seed: 3 });
  const parsed = JSON.parse(choices[0].message.content!);
  assert.ok(parsed && typeof parsed === 'object' && !Array.isArray(parsed), 'json_object: a JSON object');
});

test('frequency_penalty and presence_penalty change what is drawn (fewer repeats), recorded in the Turn', async () => {
  const most = (t: Turn): number => Math.max(...[...countOf(t.responseTokenIds).values()]);
  const distinct = (t: Turn): number => countOf(t.responseTokenIds).size;
  const plain = (await chat({ temperature: 0, max_tokens: 40 })).turns[0];
  assert.ok(most(plain) >= 4, `the tiny model repeats itself when greedy: ${plain.responseTokenIds}`);
  assert.equal(plain.exactLogprobs, true);
  const freq = (await chat({ temperature: 0, max_tokens: 40, frequency_penalty: 2 })).turns[0];
  assert.ok(most(freq) < most(plain), `frequency_penalty: ${most(freq)} < ${most(plain)}`);
  assert.equal(freq.sampling.frequencyPenalty, 2);
  assert.equal(freq.exactLogprobs, false);
  const pres = (await chat({ temperature: 0, max_tokens: 40, presence_penalty: 2 })).turns[0];
  assert.ok(distinct(pres) > distinct(plain), `presence_penalty: ${distinct(pres)} distinct tokens > ${distinct(plain)}`);
  assert.equal(pres.sampling.presencePenalty, 2);
  assert.equal(pres.exactLogprobs, false);
});

test('logit_bias: +100 makes a token the only one drawn, −100 bans the greedy one', async () => {
  const plain = (await chat({ temperature: 0, max_tokens: 12 })).turns[0];
  const greedy = plain.responseTokenIds[0];
  const banned = (await chat({ temperature: 0, max_tokens: 12, logit_bias: { [greedy]: -100 } })).turns[0];
  assert.ok(!banned.responseTokenIds.includes(greedy), `${greedy} never drawn: ${banned.responseTokenIds}`);
  assert.equal(banned.exactLogprobs, false);
  const forced = plain.responseTokenIds.find((t) => t !== greedy)!;
  const only = (await chat({ temperature: 1, seed: 5, max_tokens: 8, logit_bias: { [forced]: 100 } })).turns[0];
  assert.deepEqual(new Set(only.responseTokenIds), new Set([forced]));
});

test('seed: the same seed gives the same answer; choice i of a call is drawn with seed + i', async () => {
  const a = await chat({ temperature: 1, seed: 77, max_tokens: 24 });
  const b = await chat({ temperature: 1, seed: 77, max_tokens: 24 });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.deepEqual(a.turns[0].responseTokenIds, b.turns[0].responseTokenIds);
  const other = await chat({ temperature: 1, seed: 78, max_tokens: 24 });
  assert.notDeepEqual(other.turns[0].responseTokenIds, a.turns[0].responseTokenIds, 'another seed, another answer');
  const n = await chat({ temperature: 1, seed: 77, max_tokens: 24, n: 2 });
  assert.deepEqual(n.turns[0].responseTokenIds, a.turns[0].responseTokenIds);
  assert.deepEqual(n.turns[1].responseTokenIds, other.turns[0].responseTokenIds);
});

test('n: 3 on parallel sequences — three choices, three Turns with their own token ids and log-probs', async () => {
  const { choices, turns: t } = await chat({ temperature: 1, seed: 1, max_tokens: 16, n: 3, logprobs: true });
  assert.deepEqual(
    choices.map((c) => c.index),
    [0, 1, 2],
  );
  assert.deepEqual(
    t.map((x) => x.choiceIndex),
    [0, 1, 2],
  );
  for (const [i, turn] of t.entries()) {
    assert.equal(turn.response.content, choices[i].message.content);
    assert.equal(turn.responseLogprobs.length, turn.responseTokenIds.length);
    assert.equal(turn.sampling.seed, 1 + i);
  }
  assert.equal(new Set(t.map((x) => x.responseTokenIds.join())).size, 3, 'three different answers');
});

test('stop: the answer ends before the stop string', async () => {
  const full = (await chat({ temperature: 0, max_tokens: 30 })).choices[0].message.content!;
  const stop = full.slice(6, 8);
  const cut = (await chat({ temperature: 0, max_tokens: 30, stop: [stop] })).choices[0];
  assert.equal(cut.message.content, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.finish_reason, 'stop');
});

test('tool_choice none: the tools are not rendered into the prompt', async () => {
  const tools = [{ type: 'function', function: { name: 'lookup', description: 'Looks a word up', parameters: { type: 'object' } } }];
  const none = (await chat({ max_tokens: 2, tools, tool_choice: 'none' })).turns[0];
  const without = (await chat({ max_tokens: 2 })).turns[0];
  const withTools = (await chat({ max_tokens: 2, tools })).turns[0];
  assert.deepEqual(none.promptTokenIds, without.promptTokenIds);
  assert.notDeepEqual(withTools.promptTokenIds, without.promptTokenIds);
});

test('/v1/completions: a text prompt and its token ids answer alike; echo gives the prompt’s log-probs, as the answer’s', async () => {
  const text = await call('/v1/completions', { prompt: 'The sea was', max_tokens: 6, temperature: 0, logprobs: 2 });
  assert.equal(text.status, 200, JSON.stringify(text.json));
  const [turn] = await turnsOf(text.turnIds);
  assert.equal(text.json.choices[0].logprobs!.tokens.length, turn.responseTokenIds.length, 'one entry per generated token');
  assert.equal(turn.rawPrompt, true);
  assert.equal(turn.turnType, 'SIDE');
  assert.equal(turn.requestMessages[0].content, 'The sea was');
  const ids = await call('/v1/completions', { prompt: turn.promptTokenIds, max_tokens: 6, temperature: 0 });
  assert.equal(ids.json.choices[0].text, text.json.choices[0].text);
  assert.deepEqual((await turnsOf(ids.turnIds))[0].promptTokenIds, turn.promptTokenIds);

  // Scoring the prompt and its answer together gives, at the answer's places, the distributions it was drawn from.
  // (An end-of-generation token, if the answer has one, is no part of its text.)
  const answerIds = text.json.choices[0].finish_reason === 'stop' ? turn.responseTokenIds.slice(0, -1) : turn.responseTokenIds;
  const all = [...turn.promptTokenIds, ...answerIds];
  const scored = await call('/v1/completions', { prompt: all, max_tokens: 0, echo: true, logprobs: 2 });
  assert.equal(scored.status, 200, JSON.stringify(scored.json));
  const lp = scored.json.choices[0].logprobs!;
  assert.equal(lp.tokens.length, all.length);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x) => x !== null && x <= 0));
  const gen = text.json.choices[0].logprobs!;
  const tail = lp.top_logprobs.slice(turn.promptTokenIds.length);
  assert.equal(tail.length, answerIds.length);
  for (const [i, top] of tail.entries()) {
    for (const [tok, v] of Object.entries(gen.top_logprobs[i]!))
      assert.ok(Math.abs(top![tok] - v) < 1e-4, `position ${i}, ${tok}: ${top![tok]} vs ${v}`);
  }
  assert.equal(scored.json.choices[0].text, turn.requestMessages[0].content + text.json.choices[0].text);
});

function countOf(ids: number[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const t of ids) m.set(t, (m.get(t) ?? 0) + 1);
  return m;
}
