/**
 * The llama.cpp engine's answer text as tokens arrive: stop strings cut it, a tool call is held
 * back from the stream and known complete once its syntax closes (`parallel_tool_calls: false`
 * ends the answer there), and a grammar's closing whitespace is no part of the answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AnswerText } from '../../../gateway/answer-text.ts';

/** A template whose tool calls read `<call>name {args}</call>` (ChatFormat.parse's contract). */
const format = {
  parse: (text: string) => {
    const calls = [...text.matchAll(/<call>(\w+) (\{.*?\})<\/call>/g)].map((m, i) => ({
      id: `c${i}`,
      type: 'function',
      name: m[1],
      arguments: m[2],
    }));
    return { content: calls.length ? text.slice(0, text.indexOf('<call>')).trim() || null : text, toolCalls: calls };
  },
};

test('stop strings cut the text, and the start of one is held back until it is known', () => {
  const t = new AnswerText(['END'], '');
  assert.deepEqual(t.push('Hello E'), { delta: 'Hello ', stopped: false });
  assert.deepEqual(t.push('Hello EN'), { delta: '', stopped: false });
  assert.deepEqual(t.push('Hello ENd'), { delta: 'ENd', stopped: false });
  assert.deepEqual(t.push('Hello ENd END more'), { delta: ' ', stopped: true });
  assert.deepEqual(t.finish(), { text: 'Hello ENd ', delta: '' });
});

test('a tool call is held back from the stream, and is complete once its syntax closes', () => {
  const t = new AnswerText([], '<call>');
  assert.equal(t.push('Let me look. <ca').delta, 'Let me look. ');
  assert.equal(t.hasToolCall(format), false);
  assert.equal(t.push('Let me look. <call>find {"q": 1').delta, '');
  assert.equal(t.hasToolCall(format), false, 'not before the call closes');
  t.push('Let me look. <call>find {"q": 1}</call>');
  assert.equal(t.hasToolCall(format), true, 'parallel_tool_calls: false ends the answer here, with one call');
  assert.equal(t.finish().delta, '', 'the call is never streamed as text');
});

test('a grammar’s answer ends at its end marker, trailing whitespace trimmed', () => {
  const t = new AnswerText(['\n\n\n\n'], '', true);
  assert.equal(t.push('{"a": 1}\n').delta, '{"a": 1}');
  assert.equal(t.push('{"a": 1}\n\n\n\n').stopped, true);
  assert.deepEqual(t.finish(), { text: '{"a": 1}', delta: '' });
  const cut = new AnswerText(['\n\n\n\n'], '', true);
  cut.push('{"a": "x  ');
  assert.deepEqual(cut.finish(), { text: '{"a": "x  ', delta: '' }, 'text already streamed is never taken back');
});
