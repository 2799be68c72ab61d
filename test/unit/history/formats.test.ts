import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cleanRenderedResponse, ImportLineError, leadingStringOf, parseLine, parserFor, type ParsedLine } from '../../../history/index.ts';
import { importedTurnId } from '../../../schemas/index.ts';

const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url)), 'utf8').split('\n');

/** Parses a file the way `importFile` does: per line, errors with their line numbers. */
function parseFile(name: string, format: 'openclaw-record' | 'openai-chat') {
  const parse = parserFor(format, () => 1_700_000_000_000);
  const ok: Array<{ line: number } & ParsedLine> = [];
  const errors: Array<{ line: number; reason: string }> = [];
  fixture(name).forEach((text, i) => {
    if (text.trim() === '') return;
    try {
      ok.push({ line: i + 1, ...parseLine(parse, text) });
    } catch (err) {
      assert.ok(err instanceof ImportLineError, `line ${i + 1} threw ${(err as Error).name}`);
      errors.push({ line: i + 1, reason: err.message });
    }
  });
  return { ok, errors, turns: ok.flatMap((l) => l.turns), feedback: ok.flatMap((l) => l.feedback) };
}

describe('openclaw-record format', () => {
  const r = parseFile('openclaw-records.jsonl', 'openclaw-record');

  it('accepts the good lines and says why each bad one is rejected, with its line number', () => {
    assert.equal(r.turns.length, 6);
    assert.equal(r.feedback.length, 2);
    assert.deepEqual(
      r.errors.map((e) => e.line),
      [6, 7, 8, 9, 12],
    );
    assert.match(r.errors[0].reason, /not valid JSON/);
    assert.match(r.errors[1].reason, /^messages: expected a non-empty array/);
    assert.match(r.errors[2].reason, /^messages\[1\]\.role: expected one of .* got "robot"/);
    assert.match(r.errors[3].reason, /^timestamp: expected a timestamp.*"yesterday"/);
    assert.match(r.errors[4].reason, /^response_text: expected a string/);
  });

  it('keeps the session, the original time (naive times as UTC) and the response without template tokens', () => {
    const [t1, t2, t3, t4, side, t5] = r.turns;
    assert.equal(t1.sessionId, 'oc-1');
    assert.equal(t1.sessionSource, 'IMPORTED');
    assert.equal(t1.tokenized, false);
    assert.deepEqual([t1.promptTokenIds, t1.responseTokenIds, t1.responseLogprobs], [[], [], []]);
    assert.equal(t1.requestedAt, Date.parse('2026-02-14T20:00:00Z'));
    assert.equal(t4.requestedAt, Date.parse('2026-02-14T20:00:30Z'));
    assert.equal(t5.requestedAt, 1771102800000);
    assert.equal(t1.response.content, 'Logs flow like rivers');
    assert.deepEqual(t2.response.toolCalls, [{ id: 'call_1', type: 'function', name: 'ls', arguments: '{"path": "."}' }]);
    assert.equal(t2.response.content, '', 'the rendered <tool_call> block is not content');
    assert.equal(t2.response.finishReason, 'tool_calls');
    assert.equal(t3.requestMessages[5].role, 'tool');
    assert.equal(t3.requestMessages[5].toolCallId, 'call_1');
    assert.equal(t4.response.content, 'Sorry: there are two files, a.txt and b.txt.');
    assert.equal(side.turnType, 'SIDE');
    assert.equal(t4.userId, 'alice');
  });

  it('"next_state": null closes the session; explicit feedback and label -1 become feedback events', () => {
    const [t1, t2, t3, t4, side, t5] = r.turns;
    assert.deepEqual(
      [t1, t2, t3, t4, side, t5].map((t) => t.sessionDone),
      [false, false, false, true, false, true],
    );
    const [f4, f5] = r.feedback;
    assert.deepEqual([f4.turnId, f4.rating, f4.text, f4.sessionId], [t4.turnId, -1, 'still not what I asked', 'oc-1']);
    assert.deepEqual([f5.turnId, f5.rating, f5.text], [t5.turnId, -1, null]);
    assert.ok(f4.createdAt > t4.completedAt);
  });

  it("a record's next_state travels with its turn", () => {
    const [t1, , , t4] = r.turns;
    assert.equal(t1.nextMessages?.[0].role, 'user');
    assert.ok(t1.nextMessages?.[0].content, 'the user message that followed');
    assert.equal(t4.nextMessages, undefined, '"next_state": null: nothing followed');
    assert.deepEqual(
      r.ok.map((l) => l.nextStates),
      r.turns.map((t) => (t.nextMessages?.length ? 1 : 0)),
    );
  });

  it('gives deterministic, distinct ids', () => {
    const again = parseFile('openclaw-records.jsonl', 'openclaw-record');
    assert.deepEqual(
      again.turns.map((t) => t.turnId),
      r.turns.map((t) => t.turnId),
    );
    assert.equal(new Set(r.turns.map((t) => t.turnId)).size, 6);
    assert.match(r.turns[0].turnId, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(importedTurnId('s', 1, { a: 1 }), importedTurnId('s', 1, { a: 2 }), 'the content is part of the id');
    assert.notEqual(importedTurnId('s', 1, { a: 1 }), importedTurnId('s', 2, { a: 1 }));
  });

  it('cleans chat-template renderings', () => {
    assert.equal(cleanRenderedResponse('<think>\nhmm\n</think>\n\nHi!<|im_end|>', false), 'Hi!');
    assert.equal(cleanRenderedResponse('Hello<|eot_id|>', false), 'Hello');
    assert.equal(cleanRenderedResponse('Ok <tool_call>{"name":"x"}</tool_call><|im_end|>', true), 'Ok');
  });
});

describe('openai-chat format', () => {
  const r = parseFile('openai-chat.jsonl', 'openai-chat');

  it('splits each conversation into one turn per assistant message, rejecting bad lines with reasons', () => {
    assert.deepEqual(
      r.ok.map((l) => [l.line, l.turns.length]),
      [
        [1, 2],
        [2, 3],
        [3, 1],
      ],
    );
    assert.deepEqual(
      r.errors.map((e) => e.line),
      [4, 5, 6],
    );
    assert.match(r.errors[0].reason, /^messages: expected at least one assistant message/);
    assert.match(r.errors[1].reason, /^messages: expected a non-empty array/);
    assert.match(r.errors[2].reason, /^messages\[1\]: expected an assistant message with content or tool calls/);
  });

  it("a turn's request is the history before its assistant message; the last turn ends the session", () => {
    const chat2 = r.ok[1].turns;
    assert.deepEqual(
      chat2.map((t) => t.requestMessages.length),
      [1, 3, 5],
    );
    assert.equal(chat2[0].response.toolCalls[0].name, 'ls');
    assert.equal(chat2[2].response.content, 'a.txt, b.txt', 'content parts are flattened');
    assert.deepEqual(
      chat2.map((t) => t.sessionDone),
      [false, false, true],
    );
    assert.ok(chat2.every((t) => t.userId === 'carol' && t.sessionId === 'chat-2' && t.requestedAt === Date.parse('2026-03-01T11:00:00Z')));
  });

  it("the messages after the last assistant message are the last turn's next state; a summary counts the next states", () => {
    const [chat1, chat2, chat3] = r.ok;
    assert.deepEqual(chat1.turns.at(-1)!.nextMessages, [{ role: 'user', content: 'bye', name: null, toolCallId: null, toolCalls: [] }]);
    assert.equal(chat1.turns[0].nextMessages, undefined, 'a turn that is not the last has its next state in the next turn');
    assert.deepEqual(
      [chat1, chat2, chat3].map((l) => l.nextStates),
      [2, 2, 0],
    );
    // A conversation ending with tool results: they are the last turn's next state.
    const parse = parserFor('openai-chat', () => 0);
    const tools = parseLine(
      parse,
      JSON.stringify({
        messages: [
          { role: 'user', content: 'ls' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
          { role: 'system', content: 'not an event' },
        ],
      }),
    );
    assert.deepEqual(
      tools.turns[0].nextMessages!.map((m) => [m.role, m.content, m.toolCallId]),
      [['tool', 'a.txt', 'c1']],
    );
    assert.equal(tools.nextStates, 1);
  });

  it('carries feedback on an assistant message and derives a stable session id when none is given', () => {
    assert.equal(r.feedback.length, 1);
    assert.equal(r.feedback[0].turnId, r.ok[0].turns[1].turnId);
    assert.equal(r.feedback[0].rating, 1);
    const anon = r.ok[2].turns[0].sessionId;
    assert.match(anon, /^import-[0-9a-f-]{36}$/);
    assert.equal(parseFile('openai-chat.jsonl', 'openai-chat').ok[2].turns[0].sessionId, anon);
  });
});

describe('reading ids from Avro records', () => {
  it('reads the leading string of a Confluent-framed record', () => {
    const id = 'abc-é';
    const body = Buffer.from(id, 'utf8');
    const rec = Buffer.concat([Buffer.from([0, 0, 0, 0, 7, body.length * 2]), body, Buffer.from([1, 2, 3])]);
    assert.equal(leadingStringOf(rec), id);
    assert.equal(leadingStringOf(Buffer.from([1, 2])), null);
    assert.equal(leadingStringOf(null), null);
  });
});
