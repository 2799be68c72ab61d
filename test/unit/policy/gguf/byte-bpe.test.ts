import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BPE_TRAINING_TEXT, BYTE_TO_UNICODE, learnMerges, toByteSymbols } from '../../../../policy/gguf/byte-bpe.ts';

test('the byte alphabet is GPT-2’s: 256 distinct printable symbols, ASCII letters as themselves, space as Ġ', () => {
  assert.equal(new Set(BYTE_TO_UNICODE).size, 256);
  assert.equal(BYTE_TO_UNICODE[0x41], 'A');
  assert.equal(BYTE_TO_UNICODE[0x20], 'Ġ');
  assert.equal(BYTE_TO_UNICODE[0x0a], 'Ċ');
  assert.deepEqual(toByteSymbols('é'), ['Ã', '©']);
  const { merges, tokens } = learnMerges('the the the then', 3);
  // 'h e' and 't h' are both seen 4 times: ties go to the smaller pair, so the result is deterministic.
  assert.deepEqual(merges, ['h e', 't he', 'Ġ the']);
  assert.deepEqual(tokens, ['he', 'the', 'Ġthe']);
});

test('the built-in text yields merges whose tokens are all new, multi-symbol strings', () => {
  const { merges, tokens } = learnMerges(BPE_TRAINING_TEXT, 500);
  assert.ok(merges.length > 50 && merges.length < 500, `${merges.length} merges`); // the text runs out of repeated pairs
  assert.ok(merges.every((m) => m.split(' ').length === 2));
  assert.equal(new Set(tokens).size, tokens.length);
  assert.ok(tokens.every((t) => [...t].length >= 2));
  assert.ok(tokens.includes('Ġthe'));
});
