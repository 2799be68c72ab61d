import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteTokenizer, SPECIAL_TOKENS } from '../../../../policy/builtin/tokenizer.ts';

const tok = new ByteTokenizer();

test('vocabulary is 256 bytes plus the special tokens', () => {
  assert.equal(tok.vocabSize, 256 + SPECIAL_TOKENS.length);
  assert.equal(tok.special('<|end|>'), tok.end);
  assert.equal(tok.bos, 256);
});

test('UTF-8 text round-trips, including emoji and combining characters', () => {
  for (const text of ['hello', 'héllo wörld', '日本語', 'thumbs 👍🏽 and 🧑‍🚀', 'e\u0301', '']) {
    const ids = tok.encode(text);
    assert.ok(ids.every((id) => id >= 0 && id < 256));
    assert.equal(tok.decode(ids), text);
  }
  assert.equal(tok.encode('👍').length, 4);
});

test('text that looks like a special token stays bytes (no injection)', () => {
  const ids = tok.encode('<|end|>');
  assert.equal(ids.length, 7);
  assert.ok(!ids.includes(tok.end));
});

test('decode renders special tokens by name unless skipped', () => {
  const ids = [tok.user, ...tok.encode('hi'), tok.end];
  assert.equal(tok.decode(ids), '<|user|>hi<|end|>');
  assert.equal(tok.decode(ids, { skipSpecial: true }), 'hi');
});

test('the stream decoder emits text only when characters are complete', () => {
  const d = tok.streamDecoder();
  const bytes = tok.encode('a👍b');
  const pieces = bytes.map((b) => d.push(b));
  assert.deepEqual(pieces, ['a', '', '', '', '👍', 'b']);
  assert.equal(d.flush(), '');
  assert.equal(d.push(tok.end), '');
});

test('the stream decoder turns an incomplete tail into U+FFFD on flush', () => {
  const d = tok.streamDecoder();
  const bytes = tok.encode('€'); // 3 bytes
  assert.equal(d.push(bytes[0]) + d.push(bytes[1]), '');
  assert.equal(d.flush(), '\uFFFD');
});

test('ids outside the vocabulary are rejected', () => {
  assert.throws(() => tok.decode([tok.vocabSize]), { code: 'TS_ERR_INVALID_INPUT' });
  assert.throws(() => tok.decode([-1]), { code: 'TS_ERR_INVALID_INPUT' });
});
