/**
 * Every request field of OpenAI's chat completions and completions references, on each engine:
 * honoured (the call is answered and reaches the engine) or a 400 naming the field (it never
 * reaches the engine, and no Turn is recorded). One table per endpoint, which must list every
 * field of the reference (CHAT_FIELDS, COMPLETION_FIELDS). Each engine's own `checkRequest`
 * decides (built-in, llama.cpp, proxy); the generation itself is scripted (what an honoured field
 * does is tested per engine elsewhere, see docs/api.md).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { BuiltinEngine } from '../../../gateway/builtin-engine.ts';
import { chatCompletions } from '../../../gateway/chat-completions.ts';
import { CHAT_FIELDS, type ChatRequest } from '../../../gateway/chat-request.ts';
import { completions } from '../../../gateway/completions.ts';
import { COMPLETION_FIELDS } from '../../../gateway/completion-request.ts';
import type { Engine } from '../../../gateway/engine.ts';
import { LlamaEngine } from '../../../gateway/llama-engine.ts';
import { PolicyRegistry } from '../../../gateway/policy-registry.ts';
import { ProxyEngine } from '../../../gateway/proxy-engine.ts';
import type { Outbox } from '../../../streams/index.ts';
import { openAIError, routeApp, scriptedEngine, type ScriptedEngine } from './route-app.ts';

type Kind = 'builtin' | 'llama' | 'proxy';
const KINDS: Kind[] = ['builtin', 'llama', 'proxy'];

/** Each engine's real `checkRequest` (nothing loaded: no model needed to decide), with a scripted generation. */
function engineOf(kind: Kind): ScriptedEngine {
  const real: Engine =
    kind === 'builtin'
      ? new BuiltinEngine({
          registry: new PolicyRegistry({
            weightsDir: '/nonexistent',
            modelId: 'scripted',
            load: () => Promise.reject(new Error('not loaded')),
          }),
        })
      : kind === 'llama'
        ? new LlamaEngine({
            model: { name: 'scripted', modelId: 'scripted', path: '/nonexistent', sha256: '' },
            weightsDir: '/nonexistent',
          })
        : new ProxyEngine({ baseUrl: 'http://127.0.0.1:9' });
  return { ...scriptedEngine(), kind, checkRequest: (req: ChatRequest) => real.checkRequest(req) };
}

const closers: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of closers) await close();
});

const apps = new Map<Kind, Promise<{ app: FastifyInstance; engine: ScriptedEngine; outbox: Outbox }>>();
function appFor(kind: Kind): Promise<{ app: FastifyInstance; engine: ScriptedEngine; outbox: Outbox }> {
  let made = apps.get(kind);
  if (!made) {
    made = (async () => {
      const engine = engineOf(kind);
      const { app, outbox, close } = await routeApp([chatCompletions, completions], engine);
      closers.push(close);
      return { app, engine, outbox };
    })();
    apps.set(kind, made);
  }
  return made;
}

/** A row: the field, the body's extra fields, and per engine 'ok' or the `param` of its 400. */
type Row = [field: string, body: Record<string, unknown>, outcome: Record<Kind, string>];
const all = (outcome: string): Record<Kind, string> => ({ builtin: outcome, llama: outcome, proxy: outcome });
const local = (param: string): Record<Kind, string> => ({ builtin: param, llama: param, proxy: 'ok' });
const builtinOnly = (param: string): Record<Kind, string> => ({ builtin: param, llama: 'ok', proxy: 'ok' });

const tools = [{ type: 'function', function: { name: 'read', parameters: { type: 'object' } } }];
const schema = (s: Record<string, unknown>) => ({ type: 'json_schema', json_schema: { name: 'reply', schema: s, strict: true } });
const strict = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };

const chatRows: Row[] = [
  ['messages', {}, all('ok')],
  ['model', { model: 'scripted' }, all('ok')],
  ['audio', { audio: { voice: 'alloy', format: 'wav' }, modalities: ['text', 'audio'] }, all('audio')],
  ['frequency_penalty', { frequency_penalty: 0.8 }, builtinOnly('frequency_penalty')],
  ['function_call', { function_call: 'auto' }, all('function_call')],
  ['functions', { functions: [{ name: 'read' }] }, all('functions')],
  ['logit_bias', { logit_bias: { '5': 10 } }, builtinOnly('logit_bias')],
  ['logprobs', { logprobs: true }, all('ok')],
  ['max_completion_tokens', { max_completion_tokens: 8 }, all('ok')],
  ['max_tokens', { max_tokens: 8 }, all('ok')],
  ['metadata', { metadata: { task: 't1' } }, all('ok')],
  ['modalities', { modalities: ['text'] }, all('ok')],
  ['modalities', { modalities: ['text', 'audio'] }, all('modalities')],
  ['moderation', { moderation: { model: 'omni-moderation-latest' } }, all('moderation')],
  ['n', { n: 3 }, all('ok')],
  ['parallel_tool_calls', { tools, parallel_tool_calls: false }, all('ok')],
  ['prediction', { prediction: { type: 'content', content: 'the same text' } }, all('ok')],
  ['presence_penalty', { presence_penalty: -0.5 }, builtinOnly('presence_penalty')],
  ['prompt_cache_key', { prompt_cache_key: 'agent-7' }, all('ok')],
  ['prompt_cache_options', { prompt_cache_options: { mode: 'implicit', ttl: '30m' } }, all('ok')],
  ['prompt_cache_retention', { prompt_cache_retention: '24h' }, all('ok')],
  ['reasoning_effort', { reasoning_effort: 'none' }, all('ok')],
  ['reasoning_effort', { reasoning_effort: 'high' }, local('reasoning_effort')],
  ['response_format', { response_format: { type: 'text' } }, all('ok')],
  ['response_format', { response_format: { type: 'json_object' } }, builtinOnly('response_format')],
  ['response_format', { response_format: schema(strict) }, builtinOnly('response_format')],
  [
    'response_format',
    { response_format: schema({ type: 'object', properties: { a: { type: 'string', pattern: '^x' } } }) },
    { builtin: 'response_format', llama: 'response_format.json_schema.schema.properties.a.pattern', proxy: 'ok' },
  ],
  ['safety_identifier', { safety_identifier: 'user-hash-1' }, all('ok')],
  ['seed', { seed: 7 }, all('ok')],
  ['service_tier', { service_tier: 'default' }, all('ok')],
  ['service_tier', { service_tier: 'flex' }, local('service_tier')],
  ['stop', { stop: ['\n\n', 'END'] }, all('ok')],
  ['store', { store: false }, all('ok')],
  ['stream', { stream: true }, all('ok')],
  ['stream_options', { stream: true, stream_options: { include_usage: true, include_obfuscation: false } }, all('ok')],
  ['temperature', { temperature: 0.2 }, all('ok')],
  ['tool_choice', { tools, tool_choice: 'none' }, all('ok')],
  ['tool_choice', { tools, tool_choice: 'auto' }, all('ok')],
  ['tool_choice', { tools, tool_choice: 'required' }, local('tool_choice')],
  ['tool_choice', { tools, tool_choice: { type: 'function', function: { name: 'read' } } }, local('tool_choice')],
  ['tools', { tools }, all('ok')],
  ['top_logprobs', { logprobs: true, top_logprobs: 3 }, all('ok')],
  ['top_p', { top_p: 0.5 }, all('ok')],
  ['user', { user: 'alice' }, all('ok')],
  ['verbosity', { verbosity: 'low' }, local('verbosity')],
  ['web_search_options', { web_search_options: { search_context_size: 'low' } }, all('web_search_options')],
  // Not in OpenAI's reference: an upstream may know it, an engine here does not.
  ['(not OpenAI’s)', { top_k: 5 }, local('top_k')],
];

const completionRows: Row[] = [
  ['model', { model: 'scripted' }, all('ok')],
  ['prompt', { prompt: ['one', 'two'] }, all('ok')],
  ['prompt', { prompt: [[1, 2, 3]] }, all('ok')],
  ['best_of', { best_of: 2, n: 2 }, all('ok')],
  ['best_of', { best_of: 3 }, all('best_of')],
  ['echo', { echo: true }, all('ok')],
  ['echo', { echo: true, logprobs: 1 }, builtinOnly('echo')],
  ['frequency_penalty', { frequency_penalty: 1 }, builtinOnly('frequency_penalty')],
  ['logit_bias', { logit_bias: { '5': -100 } }, builtinOnly('logit_bias')],
  ['logprobs', { logprobs: 2 }, all('ok')],
  ['max_tokens', { max_tokens: 4 }, all('ok')],
  ['n', { n: 2 }, all('ok')],
  ['presence_penalty', { presence_penalty: 1 }, builtinOnly('presence_penalty')],
  ['seed', { seed: 3 }, all('ok')],
  ['stop', { stop: '.' }, all('ok')],
  ['stream', { stream: true }, all('ok')],
  ['stream_options', { stream: true, stream_options: { include_usage: true } }, all('ok')],
  ['suffix', { suffix: ' and they lived happily.' }, local('suffix')],
  ['temperature', { temperature: 0 }, all('ok')],
  ['top_p', { top_p: 0.9 }, all('ok')],
  ['user', { user: 'alice' }, all('ok')],
  ['(not OpenAI’s)', { min_p: 0.1 }, local('min_p')],
];
// The proxy speaks chat to its upstream: every completions request is refused there, naming the prompt.
for (const row of completionRows) if (row[2].proxy === 'ok') row[2] = { ...row[2], proxy: 'prompt' };

test('the tables list every field of OpenAI’s chat completions and completions references', () => {
  assert.deepEqual(new Set(chatRows.map((r) => r[0]).filter((f) => CHAT_FIELDS.has(f))), CHAT_FIELDS);
  assert.deepEqual(new Set(completionRows.map((r) => r[0]).filter((f) => COMPLETION_FIELDS.has(f))), COMPLETION_FIELDS);
});

async function check(kind: Kind, path: string, body: Record<string, unknown>, outcome: string, label: string): Promise<void> {
  const { app, engine, outbox } = await appFor(kind);
  const before = { calls: engine.requests.length, depth: outbox.depth };
  const res = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json' }, payload: body });
  if (outcome === 'ok') {
    assert.equal(res.statusCode, 200, `${label} on ${kind}: ${res.body.slice(0, 300)}`);
    assert.ok(engine.requests.length > before.calls, `${label} on ${kind} reached the engine`);
    return;
  }
  assert.equal(res.statusCode, 400, `${label} on ${kind} is refused: ${res.body.slice(0, 300)}`);
  const e = openAIError(res.body);
  assert.equal(e.type, 'invalid_request_error');
  assert.equal(e.param, outcome, `${label} on ${kind}: ${e.message}`);
  assert.ok(e.message.length > 20, e.message);
  assert.equal(engine.requests.length, before.calls, `${label} on ${kind} never reached the engine`);
  assert.equal(outbox.depth, before.depth, 'and left no Turn');
}

for (const kind of KINDS) {
  test(`chat completions on the ${kind} engine: every field honoured or a 400 naming it`, async () => {
    for (const [field, extra, outcome] of chatRows) {
      await check(kind, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], ...extra }, outcome[kind], field);
    }
  });
  test(`completions on the ${kind} engine: every field honoured or a 400 naming it`, async () => {
    for (const [field, extra, outcome] of completionRows) {
      await check(kind, '/v1/completions', { prompt: 'Once upon a time', ...extra }, outcome[kind], field);
    }
  });
}
