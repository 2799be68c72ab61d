/** How the built-in engine's byte tokens appear in OpenAI's `logprobs` entries. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderByteToken, tokenLogprob } from '../../../gateway/logprobs.ts';
import { ByteTokenizer } from '../../../policy/index.ts';

const tok = new ByteTokenizer();

test('ASCII bytes are their character; other bytes are escaped, with the raw byte; special tokens have no bytes', () => {
  assert.deepEqual(renderByteToken(72, tok), { token: 'H', bytes: [72] });
  assert.deepEqual(renderByteToken(10, tok), { token: '\n', bytes: [10] });
  const [c3, a9] = tok.encode('é');
  assert.deepEqual(renderByteToken(c3, tok), { token: '\\xc3', bytes: [0xc3] });
  assert.deepEqual(renderByteToken(a9, tok), { token: '\\xa9', bytes: [0xa9] });
  assert.deepEqual(renderByteToken(tok.end, tok), { token: '<|end|>', bytes: null });
  const bytes = tok.encode('naïve ☕').flatMap((id) => renderByteToken(id, tok).bytes!);
  assert.equal(Buffer.from(bytes).toString('utf8'), 'naïve ☕', 'the bytes rebuild the text');
});

test("an entry has OpenAI's fields in OpenAI's order, alternatives included", () => {
  const e = tokenLogprob(tok, 104, -0.5, [
    { id: 104, logprob: -0.5 },
    { id: tok.end, logprob: -1.25 },
  ]);
  assert.deepEqual(Object.keys(e), ['token', 'logprob', 'bytes', 'top_logprobs']);
  assert.deepEqual(e, {
    token: 'h',
    logprob: -0.5,
    bytes: [104],
    top_logprobs: [
      { token: 'h', logprob: -0.5, bytes: [104] },
      { token: '<|end|>', logprob: -1.25, bytes: null },
    ],
  });
  assert.deepEqual(tokenLogprob(tok, 33, -2).top_logprobs, []);
});
