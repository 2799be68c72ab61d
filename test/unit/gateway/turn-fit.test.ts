/** Fitting a Turn into its topic: the truncation rule of gateway/turn-fit.ts. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cutText, fitTurn, waterLevel } from '../../../gateway/turn-fit.ts';
import { encodedSize } from '../../../schemas/index.ts';
import { maxValueBytes } from '../../../streams/producer.ts';
import { exampleTurn } from '../../support/fixtures.ts';

const LIMIT = maxValueBytes('turns');
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

test('a turn that fits is left as it is', () => {
  const t = exampleTurn();
  const { turn, truncation } = fitTurn(t, LIMIT);
  assert.equal(turn, t);
  assert.equal(truncation, null);
});

test('a 3,000,000-character message is cut to fit, head and tail kept, the rest of the turn whole, and the cut recorded', () => {
  const big = `BEGIN ${'lorem ipsum '.repeat(250_000)} END`;
  const t = exampleTurn({
    requestMessages: [...exampleTurn().requestMessages, { role: 'user', content: big, name: null, toolCallId: null, toolCalls: [] }],
  });
  const { turn, truncation } = fitTurn(t, LIMIT, '/kept/t.json.gz');
  assert.ok(encodedSize('turns', turn) <= LIMIT, 'fits its topic');
  assert.ok(encodedSize('turns', turn) > LIMIT * 0.9, 'and uses most of the room');
  const cut = turn.requestMessages.at(-1)!.content!;
  assert.ok(cut.startsWith('BEGIN lorem ipsum'));
  assert.ok(cut.endsWith('lorem ipsum  END'));
  assert.match(cut, /\[… \d+ characters truncated by turnstream …\]/);
  assert.deepEqual(turn.requestMessages.slice(0, -1), exampleTurn().requestMessages, 'the short messages are whole');
  assert.deepEqual(turn.response, t.response);
  assert.deepEqual(turn.promptTokenIds, t.promptTokenIds, 'token ids are never cut');
  assert.equal(turn.tokenized, true);
  assert.deepEqual(truncation, {
    originalBytes: encodedSize('turns', t),
    truncatedFields: 1,
    maxFieldBytes: truncation!.maxFieldBytes,
    tokenIdsDropped: false,
    keptIn: '/kept/t.json.gz',
  });
  assert.deepEqual(turn.truncation, truncation, 'the Turn records it');
  assert.equal(t.requestMessages.at(-1)!.content, big, 'the captured turn itself is not changed');
});

test('several long texts are cut to one common length; shorter ones stay whole', () => {
  const msg = (content: string) => ({ role: 'user', content, name: null, toolCallId: null, toolCalls: [] });
  const t = exampleTurn({
    requestMessages: [msg('a'.repeat(900_000)), msg('b'.repeat(400_000)), msg('c'.repeat(100_000))],
    response: { content: 'd'.repeat(600_000), toolCalls: [], finishReason: 'stop' },
  });
  const { turn, truncation } = fitTurn(t, LIMIT);
  assert.ok(encodedSize('turns', turn) <= LIMIT);
  const L = truncation!.maxFieldBytes;
  assert.ok(L > 100_000 && L < 400_000, `common length ${L}`);
  assert.equal(truncation!.truncatedFields, 3);
  for (const c of [turn.requestMessages[0].content!, turn.requestMessages[1].content!, turn.response.content!])
    assert.ok(Buffer.byteLength(c) <= L);
  assert.equal(turn.requestMessages[2].content, 'c'.repeat(100_000), 'below the common length: whole');
});

test('token ids and log-probs are dropped only when they alone overflow; the turn is then untokenized', () => {
  const n = 400_000;
  const t = exampleTurn({
    promptTokenIds: Array.from({ length: n }, (_, i) => 1_000_000 + i),
    responseTokenIds: [1, 2],
    responseLogprobs: [-0.1, -0.2],
  });
  const { turn, truncation } = fitTurn(t, LIMIT);
  assert.ok(encodedSize('turns', turn) <= LIMIT);
  assert.equal(truncation!.tokenIdsDropped, true);
  assert.equal(turn.tokenized, false);
  assert.deepEqual([turn.promptTokenIds, turn.responseTokenIds, turn.responseLogprobs], [[], [], []]);
  assert.equal(turn.requestMessages[0].content, t.requestMessages[0].content, 'texts that fit stay');
});

test('cutting never splits a character, and respects the byte bound with multi-byte text', () => {
  const s = '😀é漢'.repeat(50_000);
  for (const max of [10, 1000, 99_999]) {
    const c = cutText(s, max);
    assert.ok(Buffer.byteLength(c) <= max, `${max}`);
    assert.equal(LONE_SURROGATE.test(c), false);
  }
  assert.equal(cutText('short', 100), 'short');
});

test('water level: the largest common cap that fits the budget', () => {
  assert.equal(waterLevel([10, 20, 30], 60), 30);
  assert.equal(waterLevel([10, 20, 30], 50), 20);
  assert.equal(waterLevel([10, 20, 30], 40), 15);
  assert.equal(waterLevel([100, 100], 0), 0);
});
