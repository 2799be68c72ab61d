/** Session inference from the message history. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssistantResponse, ChatMessage } from '../../../schemas/index.ts';
import { SessionIndex } from '../../../gateway/session-index.ts';
import { Lru } from '../../../gateway/lru.ts';

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
