/** `/v1/completions` bodies: the prompt shapes OpenAI takes, the legacy fields, and a 400 naming each bad one. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TurnstreamError } from '../../../core/index.ts';
import { parseCompletionRequest } from '../../../gateway/completion-request.ts';

test('a prompt as a string, strings, token ids or lists of token ids; max_tokens defaults to 16 as OpenAI', () => {
  assert.deepEqual(parseCompletionRequest({ prompt: 'Once upon' }).prompts, [{ text: 'Once upon' }]);
  assert.deepEqual(parseCompletionRequest({ prompt: ['a', 'b'] }).prompts, [{ text: 'a' }, { text: 'b' }]);
  assert.deepEqual(parseCompletionRequest({ prompt: [1, 2, 3] }).prompts, [{ tokens: [1, 2, 3] }]);
  assert.deepEqual(parseCompletionRequest({ prompt: [[1, 2], [3]] }).prompts, [{ tokens: [1, 2] }, { tokens: [3] }]);
  const c = parseCompletionRequest({ prompt: 'x', n: 2, seed: 4, stop: '\n', logprobs: 3, echo: true, suffix: '' });
  assert.equal(c.base.maxTokens, 16);
  assert.equal(c.base.n, 2);
  assert.deepEqual(c.base.stop, ['\n']);
  assert.equal(c.logprobs, 3);
  assert.equal(c.base.logprobs, true, 'the engine gives each token’s log-prob');
  assert.equal(c.base.topLogprobs, 3);
  assert.equal(c.base.echo, true);
  assert.equal(c.base.suffix, null, 'an empty suffix is none');
  assert.equal(parseCompletionRequest({ prompt: 'x', logprobs: 0 }).base.logprobs, true);
  assert.equal(parseCompletionRequest({ prompt: 'x' }).base.logprobs, false);
  assert.equal(parseCompletionRequest({ prompt: 'x', echo: true, max_tokens: 0 }).base.maxTokens, 0, 'echo alone scores the prompt');
  assert.equal(parseCompletionRequest({ prompt: 'x', best_of: 2, n: 2 }).base.n, 2, 'best_of equal to n is n');
  assert.deepEqual(parseCompletionRequest({ prompt: 'x', top_k: 1 }).base.unknownFields, ['top_k']);
});

const bad: Array<[string, unknown, string | undefined]> = [
  ['no prompt', { model: 'm' }, 'prompt'],
  ['an empty prompt list', { prompt: [] }, 'prompt'],
  ['a prompt of mixed kinds', { prompt: ['a', 1] }, 'prompt[1]'],
  ['a negative token id', { prompt: [1, -2] }, 'prompt'],
  ['an empty token list among prompts', { prompt: [[1], []] }, 'prompt[1]'],
  ['a prompt that is an object', { prompt: { text: 'a' } }, 'prompt'],
  ['logprobs above 5', { prompt: 'x', logprobs: 6 }, 'logprobs'],
  ['logprobs a boolean', { prompt: 'x', logprobs: true }, 'logprobs'],
  ['best_of other than n', { prompt: 'x', best_of: 3 }, 'best_of'],
  ['echo a string', { prompt: 'x', echo: 'yes' }, 'echo'],
  ['max_tokens 0 without echo', { prompt: 'x', max_tokens: 0 }, 'max_tokens'],
  ['suffix a number', { prompt: 'x', suffix: 1 }, 'suffix'],
  ['more than 128 choices in all', { prompt: Array.from({ length: 65 }, () => 'x'), n: 2 }, 'n'],
  ['temperature above 2', { prompt: 'x', temperature: 2.5 }, 'temperature'],
  ['a body that is not an object', [1], undefined],
];
for (const [name, body, param] of bad) {
  test(`400 for ${name}`, () => {
    assert.throws(
      () => parseCompletionRequest(body),
      (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT' && e.param === param && e.message.length > 10,
    );
  });
}
