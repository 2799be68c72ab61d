import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderPrompt, type ChatMessage } from '../../../../policy/builtin/chat-template.ts';
import { ByteTokenizer } from '../../../../policy/builtin/tokenizer.ts';

const tok = new ByteTokenizer();

test('renders <|bos|>, <|role|> content <|end|> per message, and a final <|assistant|>', () => {
  const { ids, truncatedTokens } = renderPrompt(
    tok,
    [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'hi' },
    ],
    { maxPromptTokens: 100 },
  );
  assert.deepEqual(ids, [tok.bos, tok.system, 83, tok.end, tok.user, 104, 105, tok.end, tok.assistant]);
  assert.equal(truncatedTokens, 0);
});

const long = (c: string, n: number): string => c.repeat(n);
const conversation: ChatMessage[] = [
  { role: 'system', content: 'SYSTEM-HEAD ' + long('s', 40) + ' SYSTEM-TAIL' },
  { role: 'user', content: 'first question ' + long('a', 30) },
  { role: 'assistant', content: 'first answer ' + long('b', 30) },
  { role: 'user', content: 'second question ' + long('c', 30) },
  { role: 'assistant', content: 'second answer' },
  { role: 'user', content: 'LAST USER MESSAGE' },
];

test('truncation drops the oldest history first and keeps system and the last user message', () => {
  const full = renderPrompt(tok, conversation, { maxPromptTokens: 10_000 }).ids.length;
  const max = full - 50;
  const { ids, truncatedTokens } = renderPrompt(tok, conversation, { maxPromptTokens: max });
  assert.ok(ids.length <= max);
  assert.equal(truncatedTokens, full - ids.length);
  const text = tok.decode(ids);
  assert.ok(text.includes('SYSTEM-HEAD'), 'system untouched while history can go');
  assert.ok(!text.includes('first question'), 'oldest message dropped');
  assert.ok(text.includes('second answer'), 'recent history kept');
  assert.ok(text.endsWith('<|user|>LAST USER MESSAGE<|end|><|assistant|>'));
  assert.equal(ids[0], tok.bos);
});

test('then the system prompt is trimmed from its start, keeping its tail', () => {
  const max = 60;
  const { ids } = renderPrompt(tok, conversation, { maxPromptTokens: max });
  assert.ok(ids.length <= max);
  const text = tok.decode(ids);
  assert.ok(!text.includes('SYSTEM-HEAD'));
  assert.ok(text.includes('SYSTEM-TAIL<|end|>'));
  assert.ok(text.endsWith('<|user|>LAST USER MESSAGE<|end|><|assistant|>'));
  assert.equal(ids[0], tok.bos);
});

test('finally the last message is trimmed from its start; <|bos|> and <|assistant|> always stay', () => {
  for (const max of [4, 5, 10, 21]) {
    const { ids } = renderPrompt(tok, conversation, { maxPromptTokens: max });
    assert.ok(ids.length <= max, `max ${max}: got ${ids.length}`);
    assert.equal(ids[0], tok.bos);
    assert.equal(ids.at(-1), tok.assistant);
    assert.equal(ids.at(-2), tok.end);
    const text = tok.decode(ids);
    assert.ok('LAST USER MESSAGE'.endsWith(text.slice(text.lastIndexOf('<|user|>') + 8, -'<|end|><|assistant|>'.length)));
  }
});

test('a tool result after the last user message is kept along with that user message', () => {
  const msgs: ChatMessage[] = [
    { role: 'user', content: long('x', 50) },
    { role: 'user', content: 'run ls' },
    { role: 'assistant', content: long('y', 50) },
    { role: 'tool', content: 'file.txt' },
  ];
  const { ids } = renderPrompt(tok, msgs, { maxPromptTokens: 30 });
  assert.ok(ids.length <= 30);
  assert.equal(tok.decode(ids), '<|bos|><|user|>run ls<|end|><|tool|>file.txt<|end|><|assistant|>');
});

test('trimming never starts inside a UTF-8 character', () => {
  const { ids } = renderPrompt(tok, [{ role: 'user', content: '👍👍👍👍' }], { maxPromptTokens: 10 });
  assert.ok(ids.length <= 10);
  assert.equal(tok.decode(ids), '<|bos|><|user|>👍<|end|><|assistant|>');
});

test('bad options and roles are input errors', () => {
  assert.throws(() => renderPrompt(tok, conversation, { maxPromptTokens: 3 }), { code: 'TS_ERR_INVALID_INPUT' });
  assert.throws(() => renderPrompt(tok, [], { maxPromptTokens: 10 }), { code: 'TS_ERR_INVALID_INPUT' });
  assert.throws(() => renderPrompt(tok, [{ role: 'robot' as 'user', content: '' }], { maxPromptTokens: 10 }), {
    code: 'TS_ERR_INVALID_INPUT',
  });
});
