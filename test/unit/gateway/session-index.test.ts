/** Session inference from the message history. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssistantResponse, ChatMessage } from '../../../schemas/index.ts';
import { SessionIndex } from '../../../gateway/session-index.ts';
import { Lru } from '../../../gateway/lru.ts';
import { flattenContent } from '../../../gateway/content.ts';

const m = (role: string, content: string | null): ChatMessage => ({ role, content, name: null, toolCallId: null, toolCalls: [] });
const answer = (content: string): AssistantResponse => ({ content, toolCalls: [], finishReason: 'stop' });

test('the next turn of a conversation (history + answer + new message) is matched to its session', () => {
  const idx = new SessionIndex();
  const t1 = [m('system', 'sys v1'), m('user', 'hello')];
  idx.remember('s1', t1, answer('hi!'), 'u');
  // The client resends everything, with a rebuilt system prompt and trailing whitespace.
  const t2 = [m('system', 'sys v2 (time changed)'), m('user', 'hello'), m('assistant', 'hi! '), m('user', 'how are you?')];
  assert.equal(idx.infer(t2, 'u'), 's1');
  idx.remember('s1', t2, answer('fine'), 'u');
  const t3 = [...t2, m('assistant', 'fine'), m('user', 'bye')];
  assert.equal(idx.infer(t3, 'u'), 's1');
});

test('a different history, answer or user does not match', () => {
  const idx = new SessionIndex();
  idx.remember('s1', [m('user', 'hello')], answer('hi!'), 'u');
  assert.equal(idx.infer([m('user', 'hello'), m('assistant', 'HI'), m('user', 'x')], 'u'), null);
  assert.equal(idx.infer([m('user', 'hello'), m('assistant', 'hi!'), m('user', 'x')], 'someone-else'), null);
  assert.equal(idx.infer([m('user', 'hello')], 'u'), null, 'a first message has nothing to continue');
});

test('trailing context a client injects on every request and does not keep (OpenClaw) does not split the session', () => {
  const idx = new SessionIndex();
  const injected = (n: number) => m('user', `<<<BEGIN_CONTEXT>>>\nActive sessions: ${n}\n<<<END_CONTEXT>>>`);
  const t1 = [m('system', 'You are an agent. It is 10:00.'), m('user', '[Mon 10:00] hello'), injected(1)];
  idx.remember('s-agent', t1, answer('hi, how can I help?'), null);
  // Turn 2 keeps the user's message and the answer, not the injected context, and injects anew.
  const t2 = [
    m('system', 'You are an agent. It is 10:01.'),
    m('user', '[Mon 10:00] hello'),
    m('assistant', 'hi, how can I help?'),
    m('user', '[Mon 10:01] list my files'),
    injected(2),
  ];
  assert.equal(idx.infer(t2, null), 's-agent');
  idx.remember('s-agent', t2, answer('here they are'), null);
  const t3 = [...t2.slice(0, 4), m('assistant', 'here they are'), m('user', '[Mon 10:02] thanks'), injected(3)];
  assert.equal(idx.infer(t3, null), 's-agent', 'and so on, turn after turn');
  // A client that does keep the injected message matches too.
  assert.equal(idx.infer([...t2, m('assistant', 'here they are'), m('user', 'ok')], null), 's-agent');
});

test('content sent back as parts instead of a string, and whitespace, do not matter', () => {
  const idx = new SessionIndex();
  idx.remember('s1', [m('user', 'hello there')], answer('Hi!\nHow can I help?'), null);
  // flattenContent joins parts with newlines; the client re-wrapped the answer and indented the question.
  const parts = flattenContent([
    { type: 'text', text: 'Hi!' },
    { type: 'text', text: '  How can I help? ' },
  ]);
  assert.equal(idx.infer([m('user', ' hello\tthere\n'), m('assistant', parts), m('user', 'x')], null), 's1');
});

test("two users' identical conversations are never merged, even without a user id", () => {
  const idx = new SessionIndex();
  idx.remember('alice-session', [m('user', 'hi')], answer('Hello!'), null);
  idx.remember('bob-session', [m('user', 'hi')], answer('Hello!'), null);
  // Either could be continuing: neither is chosen, the turn starts a session of its own.
  assert.equal(idx.infer([m('user', 'hi'), m('assistant', 'Hello!'), m('user', 'what time is it?')], null), null);
  // A conversation that differs anywhere is still found.
  idx.remember('carol-session', [m('user', 'hi'), m('assistant', 'Hello!'), m('user', 'weather?')], answer('Sunny.'), null);
  assert.equal(
    idx.infer([m('user', 'hi'), m('assistant', 'Hello!'), m('user', 'weather?'), m('assistant', 'Sunny.'), m('user', 'thanks')], null),
    'carol-session',
  );
  // The same turn learned twice (its own capture, then read back from Kafka) stays unambiguous.
  idx.remember('dave-session', [m('user', 'yo')], answer('Hey.'), null);
  idx.remember('dave-session', [m('user', 'yo')], answer('Hey.'), null);
  assert.equal(idx.infer([m('user', 'yo'), m('assistant', 'Hey.'), m('user', 'x')], null), 'dave-session');
});

test('tool calls and tool results are part of the history', () => {
  const idx = new SessionIndex();
  const resp: AssistantResponse = {
    content: null,
    toolCalls: [{ id: 'c1', type: 'function', name: 'ls', arguments: '{}' }],
    finishReason: 'tool_calls',
  };
  idx.remember('s-tools', [m('user', 'list files')], resp, null);
  const next: ChatMessage[] = [
    m('user', 'list files'),
    { ...m('assistant', ''), toolCalls: resp.toolCalls },
    { ...m('tool', 'a.txt'), toolCallId: 'c1' },
  ];
  assert.equal(idx.infer(next, null), 's-tools');
  // A client that rewrites tool call ids still continues the session; other arguments do not.
  const renamed: ChatMessage[] = [
    m('user', 'list files'),
    { ...m('assistant', null), toolCalls: [{ ...resp.toolCalls[0], id: 'callc1' }] },
    { ...m('tool', 'a.txt'), toolCallId: 'callc1' },
  ];
  assert.equal(idx.infer(renamed, null), 's-tools');
  const other: ChatMessage[] = [
    m('user', 'list files'),
    { ...m('assistant', null), toolCalls: [{ ...resp.toolCalls[0], arguments: '{"all":true}' }] },
  ];
  assert.equal(idx.infer(other, null), null);
});

test('the index is bounded (LRU)', () => {
  const lru = new Lru<string, number>(2);
  lru.set('a', 1);
  lru.set('b', 2);
  lru.get('a');
  lru.set('c', 3);
  assert.equal(lru.has('b'), false, 'least recently used evicted');
  assert.equal(lru.get('a'), 1);
  const idx = new SessionIndex(1);
  idx.remember('s1', [m('user', 'a')], answer('x'), null);
  idx.remember('s2', [m('user', 'b')], answer('y'), null);
  assert.equal(idx.size, 1);
  assert.equal(idx.infer([m('user', 'a'), m('assistant', 'x'), m('user', 'c')], null), null);
});
