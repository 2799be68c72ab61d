/** Request parsing: content flattening, headers vs body fields, truthy values, validation. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseChatRequest } from '../../../gateway/chat-request.ts';
import { flattenContent } from '../../../gateway/content.ts';
import { resolveTurnContext } from '../../../gateway/turn-context.ts';
import { parseTruthy } from '../../../gateway/request-values.ts';
import { TurnstreamError } from '../../../core/errors.ts';

const base = { messages: [{ role: 'user', content: 'hi' }] };

test('content parts are flattened to text; non-text parts leave a placeholder', () => {
  assert.equal(flattenContent('plain'), 'plain');
  assert.equal(flattenContent(null), null);
  assert.equal(
    flattenContent([
      { type: 'text', text: 'a' },
      { type: 'image_url', image_url: { url: 'x' } },
      { type: 'text', text: 'b' },
    ]),
    'a\n[image_url]\nb',
  );
  assert.throws(() => flattenContent(42), /must be a string/);
  assert.throws(() => flattenContent([{ type: 'text' }]), /text must be a string/);
});

test('the body is normalised: max_completion_tokens wins, stop becomes a list, turnstream fields are stripped for upstreams', () => {
  const r = parseChatRequest({
    ...base,
    model: 'm',
    max_tokens: 5,
    max_completion_tokens: 9,
    stop: 'END',
    session_id: 's',
    turn_type: 'side',
    session_done: 'on',
    tools: [{ type: 'function', function: { name: 'f' } }],
    stream: true,
    stream_options: { include_usage: true },
  });
  assert.equal(r.maxTokens, 9);
  assert.deepEqual(r.stop, ['END']);
  assert.equal(r.stream, true);
  assert.equal(r.includeUsage, true);
  assert.equal(r.tools?.length, 1);
  assert.equal(r.bodySessionId, 's');
  for (const k of ['session_id', 'turn_type', 'session_done']) assert.ok(!(k in r.upstreamBody), `${k} stripped`);
  assert.equal(r.upstreamBody.model, 'm');
  const asst = parseChatRequest({
    messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'ok' }] },
    ],
  });
  assert.deepEqual(asst.messages[1].toolCalls, [{ id: 'c1', type: 'function', name: 'ls', arguments: '{}' }]);
  assert.equal(asst.messages[2].toolCallId, 'c1');
  assert.equal(asst.messages[2].content, 'ok');
});

const bad: Array<[string, unknown, string | undefined]> = [
  ['not an object', [1, 2], undefined],
  ['missing messages', { model: 'm' }, 'messages'],
  ['empty messages', { messages: [] }, 'messages'],
  ['unknown role', { messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
  ['role not a string', { messages: [{ role: 1, content: 'x' }] }, 'messages[0].role'],
  ['user without content', { messages: [{ role: 'user' }] }, 'messages[0].content'],
  ['content a number', { messages: [{ role: 'user', content: 3 }] }, 'messages[0].content'],
  ['n above 128', { ...base, n: 129 }, 'n'],
  ['n zero', { ...base, n: 0 }, 'n'],
  ['n fractional', { ...base, n: 1.5 }, 'n'],
  ['presence_penalty above 2', { ...base, presence_penalty: 2.5 }, 'presence_penalty'],
  ['frequency_penalty a string', { ...base, frequency_penalty: 'high' }, 'frequency_penalty'],
  ['response_format not an object', { ...base, response_format: 'json' }, 'response_format'],
  ['response_format of an unknown type', { ...base, response_format: { type: 'yaml' } }, 'response_format.type'],
  ['json_schema without its object', { ...base, response_format: { type: 'json_schema' } }, 'response_format.json_schema'],
  [
    'json_schema with a bad name',
    { ...base, response_format: { type: 'json_schema', json_schema: { name: 'a b', schema: {} } } },
    'response_format.json_schema.name',
  ],
  [
    'json_schema without a schema',
    { ...base, response_format: { type: 'json_schema', json_schema: { name: 'x' } } },
    'response_format.json_schema.schema',
  ],
  [
    'json_schema strict a string',
    { ...base, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {}, strict: 'yes' } } },
    'response_format.json_schema.strict',
  ],
  ['audio output', { ...base, audio: { voice: 'alloy', format: 'mp3' } }, 'audio'],
  ['modalities with audio', { ...base, modalities: ['text', 'audio'] }, 'modalities'],
  ['modalities of an unknown kind', { ...base, modalities: ['video'] }, 'modalities'],
  ['the deprecated functions', { ...base, functions: [{ name: 'f' }] }, 'functions'],
  ['the deprecated function_call', { ...base, function_call: 'auto' }, 'function_call'],
  ['web_search_options', { ...base, web_search_options: {} }, 'web_search_options'],
  ['moderation', { ...base, moderation: { model: 'omni-moderation-latest' } }, 'moderation'],
  ['reasoning_effort of an unknown level', { ...base, reasoning_effort: 'extreme' }, 'reasoning_effort'],
  ['verbosity of an unknown level', { ...base, verbosity: 'chatty' }, 'verbosity'],
  ['service_tier of an unknown tier', { ...base, service_tier: 'gold' }, 'service_tier'],
  ['store a string', { ...base, store: 'no' }, 'store'],
  ['prompt_cache_key a number', { ...base, prompt_cache_key: 7 }, 'prompt_cache_key'],
  ['prompt_cache_retention of an unknown kind', { ...base, prompt_cache_retention: '1y' }, 'prompt_cache_retention'],
  ['prompt_cache_options of an unknown mode', { ...base, prompt_cache_options: { mode: 'sometimes' } }, 'prompt_cache_options.mode'],
  ['safety_identifier a number', { ...base, safety_identifier: 7 }, 'safety_identifier'],
  ['prediction of an unknown type', { ...base, prediction: { type: 'diff', content: 'x' } }, 'prediction'],
  ['stream_options.include_usage a string', { ...base, stream_options: { include_usage: 'yes' } }, 'stream_options.include_usage'],
  ['huge max_tokens', { ...base, max_tokens: 1e12 }, 'max_tokens'],
  ['fractional max_tokens', { ...base, max_tokens: 1.5 }, 'max_tokens'],
  ['temperature too high', { ...base, temperature: 3 }, 'temperature'],
  ['temperature a string', { ...base, temperature: 'hot' }, 'temperature'],
  ['top_p zero', { ...base, top_p: 0 }, 'top_p'],
  ['stop with 5 entries', { ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
  ['stream a string', { ...base, stream: 'yes' }, 'stream'],
  ['tools not a list', { ...base, tools: {} }, 'tools'],
  ['model a number', { ...base, model: 7 }, 'model'],
  ['seed fractional', { ...base, seed: 0.5 }, 'seed'],
  ['logprobs a string', { ...base, logprobs: 'true' }, 'logprobs'],
  ['logprobs a number', { ...base, logprobs: 1 }, 'logprobs'],
  ['top_logprobs above 20', { ...base, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
  ['top_logprobs negative', { ...base, logprobs: true, top_logprobs: -1 }, 'top_logprobs'],
  ['top_logprobs fractional', { ...base, logprobs: true, top_logprobs: 2.5 }, 'top_logprobs'],
  ['top_logprobs a string', { ...base, logprobs: true, top_logprobs: '5' }, 'top_logprobs'],
  ['top_logprobs without logprobs', { ...base, top_logprobs: 5 }, 'top_logprobs'],
  ['unknown content part type', { messages: [{ role: 'user', content: [{ type: 'video', video: {} }] }] }, 'messages[0].content[0].type'],
  [
    'image part without a url',
    { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
    'messages[0].content[0].image_url.url',
  ],
  [
    'tool_choice naming no tool',
    { ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } },
    'tool_choice',
  ],
  ['tool_choice without tools', { ...base, tool_choice: 'auto' }, 'tool_choice'],
  ['tool_choice nonsense', { ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'sometimes' }, 'tool_choice'],
  ['tool with a bad name', { ...base, tools: [{ type: 'function', function: { name: 'no spaces' } }] }, 'tools[0].function.name'],
  ['tool without a function', { ...base, tools: [{ type: 'function' }] }, 'tools[0].function'],
  ['session_done an object', { ...base, session_done: { a: 1 } }, 'session_done'],
  ['logit_bias not an object', { ...base, logit_bias: [1] }, 'logit_bias'],
  ['logit_bias key not a token id', { ...base, logit_bias: { abc: 1 } }, 'logit_bias'],
  ['logit_bias out of range', { ...base, logit_bias: { '12': -101 } }, 'logit_bias'],
  ['user of 100,000 characters', { ...base, user: 'u'.repeat(100_000) }, 'user'],
  ['10,000 messages', { messages: Array.from({ length: 10_000 }, () => ({ role: 'user', content: 'x' })) }, 'messages'],
  ['a lone surrogate', { messages: [{ role: 'user', content: 'a\ud800b' }] }, 'messages[0].content'],
  ['parallel_tool_calls a string', { ...base, parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
  ['top_logprobs with logprobs false', { ...base, logprobs: false, top_logprobs: 0 }, 'top_logprobs'],
];
for (const [name, body, param] of bad) {
  test(`400 for ${name}`, () => {
    assert.throws(
      () => parseChatRequest(body),
      (err: unknown) =>
        err instanceof TurnstreamError && err.code === 'TS_ERR_INVALID_INPUT' && err.param === param && err.message.length > 10,
    );
  });
}

test('the sampling fields beyond temperature and top_p: n, penalties (0 is none), logit_bias as pairs, response_format, parallel_tool_calls', () => {
  const none = parseChatRequest(base);
  assert.equal(none.n, 1);
  assert.equal(none.presencePenalty, null);
  assert.equal(none.frequencyPenalty, null);
  assert.deepEqual(none.logitBias, []);
  assert.deepEqual(none.responseFormat, { type: 'text' });
  assert.equal(none.parallelToolCalls, true);
  assert.deepEqual(none.unknownFields, []);
  const r = parseChatRequest({
    ...base,
    n: 3,
    presence_penalty: 0,
    frequency_penalty: -1.5,
    logit_bias: { '12': -100, '7': 2.5 },
    parallel_tool_calls: false,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
    reasoning_effort: 'low',
    store: false,
    prompt_cache_key: 'agent-1',
    top_k: 5,
  });
  assert.equal(r.n, 3);
  assert.equal(r.presencePenalty, null, 'a penalty of 0 is no penalty');
  assert.equal(r.frequencyPenalty, -1.5);
  assert.deepEqual(r.logitBias, [
    [7, 2.5],
    [12, -100],
  ]);
  assert.equal(r.parallelToolCalls, false);
  assert.deepEqual(r.responseFormat, { type: 'json_schema', name: 'answer', description: null, schema: { type: 'object' }, strict: true });
  assert.equal(r.reasoningEffort, 'low', 'kept for the engine to decide');
  assert.deepEqual(r.unknownFields, ['top_k'], 'a field in no OpenAI reference is left for the engine to refuse or forward');
  assert.equal(r.upstreamBody.top_k, 5);
});

test('logprobs and top_logprobs: defaults, accepted range, OpenAI-style messages, passed on to an upstream as sent', () => {
  const none = parseChatRequest(base);
  assert.equal(none.logprobs, false);
  assert.equal(none.topLogprobs, null);
  assert.equal(parseChatRequest({ ...base, logprobs: null, top_logprobs: null }).logprobs, false);
  for (const n of [0, 1, 20]) {
    const r = parseChatRequest({ ...base, logprobs: true, top_logprobs: n });
    assert.equal(r.logprobs, true);
    assert.equal(r.topLogprobs, n);
    assert.equal(r.upstreamBody.top_logprobs, n);
    assert.equal(r.upstreamBody.logprobs, true);
  }
  assert.equal(parseChatRequest({ ...base, logprobs: true }).topLogprobs, null);
  assert.throws(() => parseChatRequest({ ...base, logprobs: true, top_logprobs: 21 }), {
    message: "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 21 instead.",
  });
  assert.throws(() => parseChatRequest({ ...base, logprobs: 'yes' }), {
    message: "Invalid type for 'logprobs': expected a boolean, but got a string instead.",
  });
  assert.throws(() => parseChatRequest({ ...base, top_logprobs: 3 }), /'logprobs' must be set to true/);
});

test('truthy values: 1/true/yes/on in any case; garbage is an error', () => {
  for (const v of ['1', 'true', 'YES', 'On', true, 1]) assert.equal(parseTruthy(v), true, String(v));
  for (const v of ['0', 'false', 'no', 'off', '', undefined, null, false, 0]) assert.equal(parseTruthy(v), false, String(v));
  assert.throws(() => parseTruthy('maybe'), /session_done/);
});

test('headers win over body fields; defaults apply when neither is given', () => {
  const req = parseChatRequest({ ...base, session_id: 'body-s', turn_type: 'side', session_done: true, user: 'openai-user' });
  const h = resolveTurnContext({ 'x-session-id': 'hdr-s', 'x-turn-type': 'MAIN', 'x-session-done': 'no', 'x-user-id': 'hdr-u' }, req);
  assert.deepEqual(h, {
    sessionId: 'hdr-s',
    sessionSource: 'HEADER',
    turnType: 'MAIN',
    userId: 'hdr-u',
    actedBy: null,
    sessionDone: false,
  });
  const b = resolveTurnContext({}, req, { caller: { enforced: true, userId: 'openai-user', service: false } });
  assert.deepEqual(b, {
    sessionId: 'body-s',
    sessionSource: 'BODY',
    turnType: 'SIDE',
    userId: 'openai-user',
    actedBy: null,
    sessionDone: true,
  });
  const none = resolveTurnContext({}, parseChatRequest({ ...base, user: 'openai-user' }));
  assert.deepEqual(none, {
    sessionId: null,
    sessionSource: null,
    turnType: 'MAIN',
    userId: 'openai-user',
    actedBy: null,
    sessionDone: false,
  });
  assert.equal(resolveTurnContext({}, parseChatRequest(base), { defaultTurnType: 'side' }).turnType, 'SIDE');
  assert.throws(
    () => resolveTurnContext({ 'x-turn-type': 'sometimes' }, req),
    (e: unknown) => (e as TurnstreamError).param === 'X-Turn-Type',
  );
});

test('an engine that forwards requests (proxy) gets unknown content part types as they are; the Turn keeps a placeholder', () => {
  const r = parseChatRequest(
    {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'see' },
            { type: 'video', video: { url: 'v' } },
          ],
        },
      ],
    },
    { passThroughContent: true },
  );
  assert.equal(r.messages[0].content, 'see\n[video]');
  assert.deepEqual((r.upstreamBody.messages as Array<{ content: unknown[] }>)[0].content[1], { type: 'video', video: { url: 'v' } });
});

test('OpenAI metadata: string pairs kept (a gym rollout’s task, group, index); the bounds are 400s naming the field', () => {
  assert.deepEqual(parseChatRequest(base).metadata, {});
  const meta = { gym_task: 'upper-copy', gym_group: 'b0-upper-copy', gym_rollout: '3' };
  const r = parseChatRequest({ ...base, metadata: meta });
  assert.deepEqual(r.metadata, meta);
  assert.deepEqual(r.upstreamBody.metadata, meta, 'standard OpenAI: an upstream gets it too');
  const bad = (metadata: unknown, param: string, msg: RegExp) =>
    assert.throws(
      () => parseChatRequest({ ...base, metadata }),
      (e: TurnstreamError) => e.code === 'TS_ERR_INVALID_INPUT' && e.param === param && msg.test(e.message),
    );
  bad('x', 'metadata', /expected an object/);
  bad([1], 'metadata', /expected an object/);
  bad({ n: 1 }, 'metadata.n', /expected a string/);
  bad(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])), 'metadata', /at most 16 pairs/);
  bad({ ['k'.repeat(65)]: 'v' }, 'metadata', /over 64 characters/);
  bad({ k: 'v'.repeat(513) }, 'metadata.k', /over 512 characters/);
});
