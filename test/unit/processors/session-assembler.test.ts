import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as sa from '../../../processors/session-assembler/index.ts';
import { extractNextState, type SessionAssemblerOptions } from '../../../processors/session-assembler/index.ts';
import type { Feedback, SessionState, Turn, TurnPair } from '../../../schemas/index.ts';
import { chatMessage as msg } from '../../support/chat-message.ts';
import { conversationTurns } from '../../support/conversation.ts';
import { exampleFeedback, exampleTurn } from '../../support/fixtures.ts';

// Pairing logic with pairs emitted at once; the feedback grace period has its own tests below.
const IMMEDIATE = { feedbackGraceMs: 0 };
const applyTurn = (p: SessionState | undefined, t: Turn, o: SessionAssemblerOptions = {}) => sa.applyTurn(p, t, { ...IMMEDIATE, ...o });
const applyFeedback = (p: SessionState | undefined, f: Feedback, o: SessionAssemblerOptions = {}) =>
  sa.applyFeedback(p, f, { ...IMMEDIATE, ...o });
const expire = (s: SessionState, now: number, idle: number, o: SessionAssemblerOptions = {}) =>
  sa.expire(s, now, idle, { ...IMMEDIATE, ...o });

const T0 = 1_760_000_000_000;
/** The ids of the feedback, in order (undefined where there is no list, as for a pair not found). */
const feedbackIds = (feedback: ReadonlyArray<{ feedbackId: string }> | undefined) => feedback?.map((f) => f.feedbackId);

/** A conversation: turn i answers `user i` with `reply i`; its request carries the full history. */
function conversation(n: number, over: (i: number) => Partial<Turn> = () => ({})): Turn[] {
  const users = Array.from({ length: n }, (_, i) => `user ${i}`);
  return conversationTurns(users, (i) => ({ turnId: `t${i}`, requestedAt: T0 + i * 1000, completedAt: T0 + i * 1000 + 100, ...over(i) }));
}

function run(turns: Turn[], opts: SessionAssemblerOptions = {}): { state: SessionState; pairs: TurnPair[] } {
  let state: SessionState | undefined;
  const pairs: TurnPair[] = [];
  for (const t of turns) {
    const step = applyTurn(state, t, opts);
    state = step.state;
    pairs.push(...step.pairs);
  }
  return { state: state!, pairs };
}

describe('session assembler: pairing', () => {
  it('pairs main turn t with the user message turn t+1 appended, verified, in order', () => {
    const { state, pairs } = run(conversation(3));
    assert.deepEqual(
      pairs.map((p) => p.pairId),
      ['t0', 't1'],
    );
    assert.deepEqual(pairs[0].nextState, [{ role: 'USER', content: 'user 1', toolCallId: null }]);
    assert.deepEqual(
      pairs.map((p) => p.turn.mainTurnIndex),
      [0, 1],
    );
    assert.ok(pairs.every((p) => p.historyVerified && p.endMarker === null && p.tag === null));
    assert.equal(pairs[1].createdAt, T0 + 2000, "createdAt = the next turn's requestedAt (deterministic)");
    assert.equal(state.pending?.turnId, 't2');
    assert.equal(state.mainTurnCount, 3);
    assert.equal(pairs[0].userId, 'alice');
    assert.equal(pairs[0].sessionId, 'session-1');
  });

  it('uses ALL tool results of parallel tool calls, with their call ids', () => {
    const calls = [
      { id: 'c1', type: 'function', name: 'read', arguments: '{"f":"a"}' },
      { id: 'c2', type: 'function', name: 'read', arguments: '{"f":"b"}' },
    ];
    const t0 = exampleTurn({
      turnId: 'a',
      requestMessages: [msg('user', 'read a and b')],
      response: { content: null, toolCalls: calls, finishReason: 'tool_calls' },
    });
    const t1 = exampleTurn({
      turnId: 'b',
      requestedAt: T0 + 5000,
      requestMessages: [
        msg('user', 'read a and b'),
        msg('assistant', null, { toolCalls: calls }),
        msg('tool', 'A', { toolCallId: 'c1' }),
        msg('tool', 'B', { toolCallId: 'c2' }),
      ],
    });
    const { pairs } = run([t0, t1]);
    assert.equal(pairs.length, 1);
    assert.deepEqual(pairs[0].nextState, [
      { role: 'TOOL', content: 'A', toolCallId: 'c1' },
      { role: 'TOOL', content: 'B', toolCallId: 'c2' },
    ]);
    assert.equal(pairs[0].historyVerified, true);
  });

  it('marks an environment/other role as ENVIRONMENT', () => {
    const ex = extractNextState({ content: 'x', toolCalls: [], finishReason: 'stop' }, [
      msg('user', 'q'),
      msg('assistant', 'x'),
      msg('environment', 'obs'),
      msg('user', 'next'),
    ]);
    assert.deepEqual(
      ex.items.map((i) => i.role),
      ['ENVIRONMENT', 'USER'],
    );
    assert.equal(ex.historyVerified, true);
  });

  it("historyVerified is false when t+1 history lacks t's response (regeneration), next state = trailing messages", () => {
    const [t0] = conversation(1);
    const regen = exampleTurn({ turnId: 'r', requestedAt: T0 + 9000, requestMessages: t0.requestMessages });
    const { pairs } = run([t0, regen]);
    assert.equal(pairs[0].historyVerified, false);
    assert.deepEqual(pairs[0].nextState, [{ role: 'USER', content: 'user 0', toolCallId: null }]);
  });

  it('verifies despite whitespace differences and compacted (shorter) history', () => {
    const ex = extractNextState({ content: 'Hello  there\n', toolCalls: [], finishReason: 'stop' }, [
      msg('assistant', 'Hello there'),
      msg('user', 'ok'),
    ]);
    assert.equal(ex.historyVerified, true);
    assert.deepEqual(ex.items, [{ role: 'USER', content: 'ok', toolCallId: null }]);
  });

  it('leaves out trailing context the client injects into every request and does not keep (OpenClaw)', () => {
    const injected = (n: number) => msg('user', `<<<BEGIN_CONTEXT>>> active sessions: ${n} <<<END_CONTEXT>>>`);
    const t0 = exampleTurn({
      turnId: 'a',
      requestMessages: [msg('system', 'agent'), msg('user', 'hello'), injected(0)],
      response: { content: 'hi', toolCalls: [], finishReason: 'stop' },
    });
    const t1 = exampleTurn({
      turnId: 'b',
      requestedAt: T0 + 5000,
      requestMessages: [
        msg('system', 'agent'),
        msg('user', 'hello'),
        msg('assistant', 'hi'),
        msg('user', 'no, that is wrong'),
        injected(1),
      ],
    });
    const { pairs } = run([t0, t1]);
    assert.deepEqual(pairs[0].nextState, [{ role: 'USER', content: 'no, that is wrong', toolCallId: null }]);
    assert.equal(pairs[0].historyVerified, true);
    // A client that keeps what it sends gets everything after the answer, as before.
    const kept = exampleTurn({
      turnId: 'c',
      requestedAt: T0 + 5000,
      requestMessages: [...t0.requestMessages, msg('assistant', 'hi'), msg('user', 'one'), msg('user', 'two')],
    });
    assert.deepEqual(
      run([t0, kept]).pairs[0].nextState.map((i) => i.content),
      ['one', 'two'],
    );
    // Tool results after a tool call keep their place; only the injected tail goes.
    const call = { id: 'c1', type: 'function', name: 'ls', arguments: '{}' };
    const t2 = exampleTurn({
      turnId: 'd',
      requestMessages: [msg('user', 'list'), injected(0)],
      response: { content: null, toolCalls: [call], finishReason: 'tool_calls' },
    });
    const t3 = exampleTurn({
      turnId: 'e',
      requestedAt: T0 + 5000,
      requestMessages: [
        msg('user', 'list'),
        msg('assistant', null, { toolCalls: [{ ...call, id: 'callc1' }] }),
        msg('tool', 'a.txt', { toolCallId: 'callc1' }),
        injected(1),
      ],
    });
    const tools = run([t2, t3]).pairs[0];
    assert.deepEqual(tools.nextState, [{ role: 'TOOL', content: 'a.txt', toolCallId: 'callc1' }]);
    assert.equal(tools.historyVerified, true, 'a rewritten tool call id is the same call');
  });

  it('a turn that carries what followed it (imported history) is paired with that when the session ends', () => {
    const [t0, t1] = conversation(2, (i) => (i === 1 ? { sessionDone: true, nextMessages: [msg('user', '👎 no, that is wrong')] } : {}));
    const { pairs } = run([t0, t1]);
    assert.deepEqual(
      pairs.map((p) => [p.pairId, p.endMarker, p.historyVerified]),
      [
        ['t0', null, true],
        ['t1', null, true],
      ],
    );
    assert.deepEqual(pairs[1].nextState, [{ role: 'USER', content: '👎 no, that is wrong', toolCallId: null }]);
    // Closed by the idle timeout instead: the same.
    const idle = run([exampleTurn({ turnId: 'x', nextMessages: [msg('user', 'perfect!')] })]);
    const closed = expire(idle.state, T0 + 10_000_000, 1000);
    assert.deepEqual(
      closed.pairs.map((p) => [p.endMarker, p.nextState.map((i) => i.content)]),
      [[null, ['perfect!']]],
    );
  });

  it('never pairs SIDE turns, but counts them as activity', () => {
    const turns = conversation(3, (i) => (i === 1 ? { turnType: 'SIDE' } : {}));
    const { pairs, state } = run(turns);
    assert.deepEqual(
      pairs.map((p) => p.pairId),
      ['t0'],
    );
    // t2's history holds reply 0, then the side exchange: t0's next state is still what followed it.
    assert.equal(pairs[0].historyVerified, true);
    assert.deepEqual(pairs[0].nextState, [{ role: 'USER', content: 'user 1', toolCallId: null }]);
    assert.equal(state.mainTurnCount, 2);
    assert.equal(state.lastActivityAt, T0 + 2100);
  });

  it('a session of only SIDE turns yields nothing, even at close', () => {
    const turns = conversation(2, () => ({ turnType: 'SIDE' }));
    const { pairs, state } = run(turns);
    assert.equal(pairs.length, 0);
    assert.equal(expire(state, T0 + 10_000_000, 1000).pairs.length, 0);
  });
});

describe('session assembler: duplicates and out-of-order', () => {
  it('ignores a duplicate turn id', () => {
    const turns = conversation(2);
    const { state } = run(turns);
    const dup = applyTurn(state, turns[1]);
    assert.equal(dup.ignored, 'duplicate');
    assert.equal(dup.pairs.length, 0);
    assert.equal(dup.state, state);
  });

  it('bounds the recent ids', () => {
    const { state } = run(conversation(10), { maxRecentIds: 4 });
    assert.deepEqual(state.recentIds, ['t6', 't7', 't8', 't9']);
  });

  it("a late turn whose response is in pending's history is paired with it; indices stay in conversation order", () => {
    const [t0, t1, t2] = conversation(3);
    // t1 is delayed: t0 is paired with t2's history (its own reply is still found there).
    const { state, pairs } = run([t0, t2, t1]);
    assert.deepEqual(
      pairs.map((p) => p.pairId),
      ['t0', 't1'],
    );
    assert.deepEqual(pairs[0].nextState, [{ role: 'USER', content: 'user 1', toolCallId: null }]);
    assert.deepEqual(pairs[1].nextState, [{ role: 'USER', content: 'user 2', toolCallId: null }]);
    assert.ok(pairs.every((p) => p.historyVerified));
    assert.deepEqual(
      pairs.map((p) => p.turn.mainTurnIndex),
      [0, 1],
    );
    assert.equal(state.pending?.turnId, 't2');
    assert.equal(state.pending?.mainTurnIndex, 2);
    assert.equal(state.mainTurnCount, 3);
  });

  it("a late turn not in pending's history is recorded, not paired", () => {
    const [t0, t1] = conversation(2);
    const stray = exampleTurn({
      turnId: 'stray',
      requestedAt: T0 - 1,
      response: { content: 'other', toolCalls: [], finishReason: 'stop' },
    });
    const { state } = run([t0, t1]);
    const step = applyTurn(state, stray);
    assert.equal(step.ignored, 'late-turn');
    assert.equal(step.pairs.length, 0);
    assert.equal(step.state.pending?.turnId, 't1');
    assert.ok(step.state.recentIds.includes('stray'));
  });
});

describe('session assembler: feedback', () => {
  it('attaches feedback for the pending turn to its pair: FEEDBACK items and the feedback array', () => {
    const [t0, t1] = conversation(2);
    let s = applyTurn(undefined, t0).state;
    s = applyFeedback(s, exampleFeedback({ feedbackId: 'f1', turnId: 't0', rating: -1, text: 'too long', createdAt: T0 + 400 })).state;
    s = applyFeedback(
      s,
      exampleFeedback({ feedbackId: 'f2', turnId: null, rating: null, text: 'end with a question', createdAt: T0 + 500 }),
    ).state;
    const { pairs } = applyTurn(s, t1);
    assert.equal(pairs.length, 1);
    assert.deepEqual(pairs[0].nextState, [
      { role: 'USER', content: 'user 1', toolCallId: null },
      { role: 'FEEDBACK', content: '👎 (thumbs down) — too long', toolCallId: null },
      { role: 'FEEDBACK', content: 'end with a question', toolCallId: null },
    ]);
    assert.deepEqual(feedbackIds(pairs[0].feedback), ['f1', 'f2']);
  });

  it('ignores duplicate, late and unknown-turn feedback', () => {
    const [t0, t1] = conversation(2);
    let s = applyTurn(undefined, t0).state;
    s = applyFeedback(s, exampleFeedback({ feedbackId: 'f1', turnId: 't0' })).state;
    assert.equal(applyFeedback(s, exampleFeedback({ feedbackId: 'f1', turnId: 't0' })).ignored, 'duplicate');
    s = applyTurn(s, t1).state;
    const late = applyFeedback(s, exampleFeedback({ feedbackId: 'f2', turnId: 't0' }));
    assert.equal(late.ignored, 'late-feedback');
    assert.equal(late.state.pendingFeedback.length, 0);
    assert.equal(applyFeedback(s, exampleFeedback({ feedbackId: 'f3', turnId: 'nope' })).ignored, 'unknown-turn');
    assert.equal(applyFeedback(undefined, exampleFeedback({ feedbackId: 'f4', turnId: null })).ignored, 'no-pending');
  });
});

describe('session assembler: session end', () => {
  it('sessionDone pairs the previous turn normally and closes with SESSION_DONE (masked by default)', () => {
    const turns = conversation(2, (i) => (i === 1 ? { sessionDone: true } : {}));
    const { state, pairs } = run(turns);
    assert.deepEqual(
      pairs.map((p) => [p.pairId, p.endMarker]),
      [
        ['t0', null],
        ['t1', 'SESSION_DONE'],
      ],
    );
    assert.deepEqual(pairs[1].nextState, []);
    assert.equal(pairs[1].createdAt, T0 + 1100);
    assert.equal(state.closed, true);
    assert.equal(state.closedReason, 'SESSION_DONE');
    assert.equal(state.pending, null);
  });

  it('endPolicy drop emits no pair for a last turn without feedback, but keeps one with feedback', () => {
    const turns = conversation(2, (i) => (i === 1 ? { sessionDone: true } : {}));
    assert.deepEqual(
      run(turns, { endPolicy: 'drop' }).pairs.map((p) => p.pairId),
      ['t0'],
    );
    let s = applyTurn(undefined, turns[0], { endPolicy: 'drop' }).state;
    s = applyFeedback(s, exampleFeedback({ feedbackId: 'f', turnId: 't0', rating: 1, text: null })).state;
    const closed = expire(s, T0 + 60_000, 1000, { endPolicy: 'drop' });
    assert.equal(closed.pairs.length, 1);
    assert.equal(closed.pairs[0].endMarker, 'IDLE_TIMEOUT');
    assert.deepEqual(closed.pairs[0].nextState, [{ role: 'FEEDBACK', content: '👍 (thumbs up)', toolCallId: null }]);
  });

  it('the idle timeout closes a session only once it is idle long enough', () => {
    const { state } = run(conversation(1));
    assert.equal(expire(state, T0 + 100 + 999, 1000).pairs.length, 0);
    const step = expire(state, T0 + 100 + 1000, 1000);
    assert.equal(step.pairs.length, 1);
    assert.equal(step.pairs[0].endMarker, 'IDLE_TIMEOUT');
    assert.equal(step.pairs[0].createdAt, T0 + 1100);
    assert.equal(step.state.closedReason, 'IDLE_TIMEOUT');
    assert.equal(expire(step.state, T0 + 10_000_000, 1000).pairs.length, 0, 'closed stays closed');
  });

  it('a newer turn reopens a closed session (its earlier turn is not paired twice); an older one is late', () => {
    const [t0, t1] = conversation(2, (i) => ({ requestedAt: T0 + i * 100_000, completedAt: T0 + i * 100_000 + 100 }));
    const s = expire(applyTurn(undefined, t0).state, T0 + 50_000, 1000).state;
    const reopened = applyTurn(s, t1);
    assert.equal(reopened.pairs.length, 0);
    assert.equal(reopened.state.closed, false);
    assert.equal(reopened.state.pending?.turnId, 't1');
    assert.equal(reopened.state.pending?.mainTurnIndex, 1);
    const old = exampleTurn({ turnId: 'old', requestedAt: T0 - 5 });
    assert.equal(applyTurn(s, old).ignored, 'late-turn');
  });

  it('untokenized and empty turns are paired (analytics) with their flags intact', () => {
    const turns = conversation(2, (i) =>
      i === 0 ? { tokenized: false, promptTokenIds: [], responseTokenIds: [], responseLogprobs: [] } : {},
    );
    const { pairs } = run(turns);
    assert.equal(pairs.length, 1);
    assert.equal(pairs[0].turn.tokenized, false);
  });

  it('stamps the replay tag', () => {
    assert.equal(run(conversation(2), { tag: 'exp1' }).pairs[0].tag, 'exp1');
  });
});

describe('session assembler: feedback grace period (feedback read after the next turn)', () => {
  const G = { feedbackGraceMs: 2000 };
  const releaseAt = (s: SessionState, now: number) => sa.release(s, now, G);

  it('holds a ready pair for the grace period in stream time, then releases it exactly once', () => {
    const [t0, t1] = conversation(2);
    let s = sa.applyTurn(undefined, t0, G).state;
    const step = sa.applyTurn(s, t1, G);
    assert.deepEqual(step.pairs, [], 'nothing is emitted while the pair is held');
    s = step.state;
    assert.deepEqual(
      s.held.map((p) => p.pairId),
      ['t0'],
    );
    assert.equal(releaseAt(s, t1.requestedAt + 1999).pairs.length, 0);
    const r = releaseAt(s, t1.requestedAt + 2000);
    assert.deepEqual(
      r.pairs.map((p) => p.pairId),
      ['t0'],
    );
    assert.deepEqual(r.pairs[0].nextState, [{ role: 'USER', content: 'user 1', toolCallId: null }]);
    assert.deepEqual(r.state.held, []);
    assert.equal(releaseAt(r.state, t1.requestedAt + 99_000).pairs.length, 0, 'released once');
  });

  it("a turn read after the session's last turn closed it (another gateway was slower) slots in while that turn's pair is held", () => {
    const [t0, t1, t2] = conversation(3, (i) => (i === 2 ? { sessionDone: true } : {}));
    // t1 was answered by one gateway, t2 (the last, X-Session-Done) by another whose turn was read first.
    let s = sa.applyTurn(undefined, t0, G).state;
    s = sa.applyTurn(s, t2, G).state;
    assert.equal(s.closed, true);
    const step = sa.applyTurn(s, t1, G);
    assert.equal(step.ignored, undefined, 'not dropped as late');
    const out = releaseAt(step.state, t2.completedAt + 99_000).pairs;
    assert.deepEqual(out.map((p) => `${p.pairId}:${p.turn.mainTurnIndex}:${p.endMarker ?? 'next'}`).sort(), [
      't0:0:next',
      't1:1:next',
      't2:2:SESSION_DONE',
    ]);
    const p1 = out.find((p) => p.pairId === 't1')!;
    assert.equal(p1.historyVerified, true);
    assert.deepEqual(p1.nextState, [{ role: 'USER', content: 'user 2', toolCallId: null }]);
    assert.equal(step.state.mainTurnCount, 3);
    // Once the held pairs are out, a turn that late is recorded only, as before.
    const released = releaseAt(s, t2.completedAt + 99_000).state;
    assert.equal(sa.applyTurn(released, t1, G).ignored, 'late-turn');
  });

  it('a 👎 read after the next turn still reaches the pair; after the release it is late', () => {
    const [t0, t1] = conversation(2);
    let s = sa.applyTurn(sa.applyTurn(undefined, t0, G).state, t1, G).state;
    const fb = sa.applyFeedback(
      s,
      exampleFeedback({ feedbackId: 'f1', turnId: 't0', rating: -1, text: 'too long', createdAt: t1.requestedAt + 500 }),
      G,
    );
    assert.equal(fb.ignored, undefined);
    s = fb.state;
    const [pair] = releaseAt(s, t1.requestedAt + 2000).pairs;
    assert.deepEqual(feedbackIds(pair.feedback), ['f1']);
    assert.deepEqual(pair.nextState, [
      { role: 'USER', content: 'user 1', toolCallId: null },
      { role: 'FEEDBACK', content: '👎 (thumbs down) — too long', toolCallId: null },
    ]);
    const after = releaseAt(s, t1.requestedAt + 2000).state;
    assert.equal(sa.applyFeedback(after, exampleFeedback({ feedbackId: 'f2', turnId: 't0' }), G).ignored, 'late-feedback');
  });

  it('feedback read before its turn waits for it; feedback for a turn that never comes expires, reported', () => {
    const [t0, t1] = conversation(2);
    let s = sa.applyFeedback(
      undefined,
      exampleFeedback({ feedbackId: 'early', turnId: 't0', rating: 1, text: null, createdAt: T0 + 300 }),
      G,
    ).state;
    s = sa.applyFeedback(s, exampleFeedback({ feedbackId: 'ghost', turnId: 'never', rating: 1, text: null, createdAt: T0 + 300 }), G).state;
    assert.deepEqual(feedbackIds(s.earlyFeedback), ['early', 'ghost']);
    s = sa.applyTurn(s, t0, G).state;
    assert.deepEqual(feedbackIds(s.pendingFeedback), ['early']);
    assert.deepEqual(feedbackIds(s.earlyFeedback), ['ghost']);
    s = sa.applyTurn(s, t1, G).state;
    const r = releaseAt(s, t1.requestedAt + 2000);
    assert.deepEqual(feedbackIds(r.pairs[0].feedback), ['early']);
    assert.deepEqual(feedbackIds(r.expiredFeedback), ['ghost']);
    assert.deepEqual(r.state.earlyFeedback, []);
  });

  it('feedback naming no turn goes to the newest answer complete when it was given', () => {
    const [t0, t1] = conversation(2);
    let s = sa.applyTurn(sa.applyTurn(undefined, t0, G).state, t1, G).state;
    // Given between t0 and t1 (read after t1): it is about t0.
    s = sa.applyFeedback(
      s,
      exampleFeedback({ feedbackId: 'a', turnId: null, rating: -1, text: null, createdAt: t1.requestedAt - 10 }),
      G,
    ).state;
    // Given after t1's answer: about t1.
    s = sa.applyFeedback(
      s,
      exampleFeedback({ feedbackId: 'b', turnId: null, rating: 1, text: null, createdAt: t1.completedAt + 10 }),
      G,
    ).state;
    assert.deepEqual(feedbackIds(s.held[0].feedback), ['a']);
    // 'b' waits: a turn answered after t1 and before 'b' may not be read yet. None comes: t1's.
    assert.deepEqual(feedbackIds(s.earlyFeedback), ['b']);
    assert.deepEqual(
      sa.release(s, t1.completedAt + 10 + 2000, G).expiredFeedback,
      [],
      'it waits past its grace: pending is not paired yet',
    );
    const closed = sa.expire(s, t1.completedAt + 60_000, 1000, G).state;
    assert.deepEqual(feedbackIds(closed.held.find((p) => p.pairId === 't1')?.feedback), ['b']);
  });

  it('feedback naming no turn, given after the next answer but read before it, goes to that next turn', () => {
    const [t0, t1] = conversation(2);
    let s = sa.applyTurn(undefined, t0, G).state;
    s = sa.applyFeedback(
      s,
      exampleFeedback({ feedbackId: 'c', turnId: null, rating: 1, text: null, createdAt: t1.completedAt + 50 }),
      G,
    ).state;
    s = sa.applyTurn(s, t1, G).state;
    assert.deepEqual(s.held[0].feedback, [], "not t0's: t1's answer was there before it was given");
    const closed = sa.expire(s, t1.completedAt + 60_000, 1000, G).state;
    assert.deepEqual(feedbackIds(closed.held.find((p) => p.pairId === 't1')?.feedback), ['c']);
  });

  it('feedback naming no turn, read before any turn of its session, goes to the answer it was given after', () => {
    const [t0, t1, t2] = conversation(3);
    let s = sa.applyFeedback(
      undefined,
      exampleFeedback({ feedbackId: 'x', turnId: null, rating: -1, text: null, createdAt: t1.completedAt + 10 }),
      G,
    ).state;
    s = sa.applyFeedback(
      s,
      exampleFeedback({ feedbackId: 'y', turnId: null, rating: 1, text: null, createdAt: t2.completedAt + 10 }),
      G,
    ).state;
    for (const t of [t0, t1, t2]) s = sa.applyTurn(s, t, G).state;
    assert.deepEqual(
      s.held.map((p) => [p.pairId, feedbackIds(p.feedback)]),
      [
        ['t0', []],
        ['t1', ['x']],
      ],
    );
    // 'y' was given during t2, the newest turn: it waits (past its grace) for t2 to be paired or closed.
    const r = sa.release(s, t2.completedAt + 10 + 2000, G);
    assert.deepEqual(r.expiredFeedback, []);
    const closed = sa.expire(r.state, t2.completedAt + 60_000, 1000, G).state;
    assert.deepEqual(feedbackIds(closed.held.find((p) => p.pairId === 't2')?.feedback), ['y']);
  });

  it("endPolicy drop: a closed session's last pair is held; feedback in the grace period keeps it, else it is dropped", () => {
    const turns = conversation(2, (i) => (i === 1 ? { sessionDone: true } : {}));
    const o = { ...G, endPolicy: 'drop' as const };
    const closed = sa.applyTurn(sa.applyTurn(undefined, turns[0], o).state, turns[1], o).state;
    assert.deepEqual(
      closed.held.map((p) => [p.pairId, p.endMarker]),
      [
        ['t0', null],
        ['t1', 'SESSION_DONE'],
      ],
    );
    const later = turns[1].requestedAt + 5000;
    assert.deepEqual(
      sa.release(closed, later, o).pairs.map((p) => p.pairId),
      ['t0'],
      'no feedback: the end pair is dropped',
    );
    const rescued = sa.applyFeedback(
      closed,
      exampleFeedback({ feedbackId: 'f', turnId: 't1', rating: 1, text: null, createdAt: turns[1].completedAt + 100 }),
      o,
    ).state;
    const out = sa.release(rescued, later, o).pairs;
    assert.deepEqual(
      out.map((p) => [p.pairId, p.endMarker]),
      [
        ['t0', null],
        ['t1', 'SESSION_DONE'],
      ],
    );
    assert.deepEqual(out[1].nextState, [{ role: 'FEEDBACK', content: '👍 (thumbs up)', toolCallId: null }]);
  });

  it('an idle-timeout pair is held as well, and a negative grace period is refused', () => {
    const { state } = run(conversation(1), G);
    const idle = sa.expire(state, T0 + 100 + 1000, 1000, G);
    assert.equal(idle.pairs.length, 0);
    assert.deepEqual(
      idle.state.held.map((p) => p.endMarker),
      ['IDLE_TIMEOUT'],
    );
    assert.equal(sa.release(idle.state, T0 + 1100 + 2000, G).pairs.length, 1);
    assert.throws(() => sa.applyTurn(undefined, conversation(1)[0], { feedbackGraceMs: -1 }), /feedbackGraceMs/);
  });
});

describe('session assembler: event time decides, not the order of reading (replay = live)', () => {
  const G = { feedbackGraceMs: 2000, idleTimeoutMs: 60_000 };
  const fb = (id: string, turnId: string | null, createdAt: number, over: Partial<Feedback> = {}) =>
    exampleFeedback({ feedbackId: id, turnId, rating: 1, text: null, createdAt, ...over });

  it('a turn that comes after the idle timeout closes the session first: the same pair as the punctuator gives', () => {
    const [t0, t1] = conversation(2, (i) => ({ requestedAt: T0 + i * 100_000, completedAt: T0 + i * 100_000 + 100 }));
    const s0 = sa.applyTurn(undefined, t0, G).state;
    // Live, the punctuator may or may not have got there before t1 is read.
    const byClock = sa.applyTurn(sa.expire(s0, T0 + 90_000, G.idleTimeoutMs, G).state, t1, G).state;
    const byTurn = sa.applyTurn(s0, t1, G);
    assert.equal(byTurn.closedIdle, true);
    assert.deepEqual(byTurn.state, byClock);
    assert.deepEqual(
      byTurn.state.held.map((p) => [p.pairId, p.endMarker, p.createdAt]),
      [['t0', 'IDLE_TIMEOUT', T0 + 100 + 60_000]],
      'made as of the moment it went idle',
    );
    assert.equal(byTurn.state.pending?.turnId, 't1');
    assert.equal(byTurn.state.pending?.mainTurnIndex, 1);
  });

  it('the idle pair is made as of the moment the session went idle, whenever the clock notices', () => {
    const s0 = sa.applyTurn(undefined, conversation(1)[0], G).state;
    const a = sa.expire(s0, T0 + 100 + 60_000, G.idleTimeoutMs, G).state;
    const b = sa.expire(s0, T0 + 9_000_000, G.idleTimeoutMs, G).state;
    assert.deepEqual(a, b);
    assert.equal(a.held[0].createdAt, T0 + 100 + 60_000);
  });

  it('feedback does not keep a session open: idle is measured from the last turn', () => {
    const [t0, t1] = conversation(2, (i) => ({ requestedAt: T0 + i * 70_000, completedAt: T0 + i * 70_000 + 100 }));
    let s = sa.applyTurn(undefined, t0, G).state;
    s = sa.applyFeedback(s, fb('f', 't0', T0 + 30_000), G).state;
    assert.equal(s.lastActivityAt, t0.completedAt);
    const step = sa.applyTurn(s, t1, G);
    assert.equal(step.closedIdle, true);
    assert.deepEqual(
      step.state.held.map((p) => [p.pairId, p.endMarker, feedbackIds(p.feedback)]),
      [['t0', 'IDLE_TIMEOUT', ['f']]],
    );
  });

  it('feedback given after the grace period is late, however early it was read (pending, held or early)', () => {
    const [t0, t1] = conversation(2);
    const late = fb('late', 't0', t1.requestedAt + 2000); // the grace ends at t1.requestedAt + 2000
    const inTime = fb('ok', 't0', t1.requestedAt + 1999);
    const readFirst = (f: Feedback) => {
      const s = sa.applyFeedback(sa.applyTurn(undefined, t0, G).state, f, G).state; // read while t0 is pending
      return sa.applyTurn(s, t1, G);
    };
    const readAfter = (f: Feedback) => sa.applyFeedback(sa.applyTurn(sa.applyTurn(undefined, t0, G).state, t1, G).state, f, G);
    const readEarly = (f: Feedback) => sa.applyTurn(sa.applyTurn(sa.applyFeedback(undefined, f, G).state, t0, G).state, t1, G);
    for (const order of [readFirst, readAfter, readEarly]) {
      assert.deepEqual(feedbackIds(order(inTime).state.held[0].feedback), ['ok']);
      const l = order(late);
      assert.deepEqual(l.state.held[0].feedback, []);
      assert.ok(l.ignored === 'late-feedback' || l.lateFeedback === 1, 'counted as late');
    }
  });

  it("a pair's feedback is in the order it was given, whatever order it was read in", () => {
    const [t0, t1] = conversation(2);
    const named = fb('b-named', 't0', T0 + 600);
    const anon = fb('a-anon', null, T0 + 500, { rating: -1 });
    const twin = fb('c-twin', 't0', T0 + 600);
    const orders = [
      [anon, named, twin],
      [twin, named, anon],
    ];
    const results = orders.flatMap((fbs) => [
      // all read before any turn
      sa.applyTurn(
        sa.applyTurn(
          fbs.reduce((s, f) => sa.applyFeedback(s, f, G).state, undefined as SessionState | undefined),
          t0,
          G,
        ).state,
        t1,
        G,
      ).state.held[0],
      // read while t0 is pending
      sa.applyTurn(
        fbs.reduce((s, f) => sa.applyFeedback(s, f, G).state, sa.applyTurn(undefined, t0, G).state),
        t1,
        G,
      ).state.held[0],
    ]);
    for (const pair of results) {
      assert.deepEqual(feedbackIds(pair.feedback), ['a-anon', 'b-named', 'c-twin']);
      assert.deepEqual(
        pair.nextState.map((i) => i.role),
        ['USER', 'FEEDBACK', 'FEEDBACK', 'FEEDBACK'],
      );
    }
  });

  it("the session's user comes from its turns, not from feedback read before them", () => {
    const [t0, t1] = conversation(2, () => ({ userId: null }));
    const first = sa.applyFeedback(undefined, fb('f', 't0', T0 + 500, { userId: 'mallory' }), G).state;
    const a = sa.applyTurn(sa.applyTurn(first, t0, G).state, t1, G).state;
    const b = sa.applyTurn(sa.applyTurn(undefined, t0, G).state, t1, G).state;
    assert.equal(a.held[0].userId, null);
    assert.equal(b.held[0].userId, null);
  });

  it('a turn that comes closedRetentionMs after a closed session starts it afresh, as the live service forgets it', () => {
    const o = { ...G, closedRetentionMs: 10 * 60_000 };
    const [t0] = conversation(1, () => ({ sessionDone: true }));
    let s = sa.applyTurn(undefined, t0, o).state;
    s = sa.release(s, t0.completedAt + 2000, o).state;
    assert.equal(sa.forgettable(s, t0.completedAt + 10 * 60_000, o), true);
    const again = exampleTurn({ turnId: 'again', requestedAt: T0 + 11 * 60_000, completedAt: T0 + 11 * 60_000 + 100 });
    const byTurn = sa.applyTurn(s, again, o).state;
    const forgotten = sa.applyTurn(undefined, again, o).state;
    assert.deepEqual(byTurn, forgotten);
    assert.equal(byTurn.pending?.mainTurnIndex, 0);
    // Sooner, the session goes on: the next turn index, and its ids still deduplicated.
    const soon = exampleTurn({ turnId: 'soon', requestedAt: T0 + 5 * 60_000, completedAt: T0 + 5 * 60_000 + 100 });
    assert.equal(sa.applyTurn(s, soon, o).state.pending?.mainTurnIndex, 1);
    assert.equal(sa.applyTurn(s, t0, o).ignored, 'duplicate');
  });

  it('forgetting keeps what is still held and waiting; a session with no turn is forgotten once nothing waits', () => {
    const o = { ...G, closedRetentionMs: 10 * 60_000 };
    const [t0] = conversation(1, () => ({ sessionDone: true }));
    const closed = sa.applyFeedback(sa.applyTurn(undefined, t0, o).state, fb('next', 'later-turn', T0 + 200), o).state;
    assert.equal(sa.forgettable(closed, t0.completedAt + 10 * 60_000, o), true);
    const fresh = sa.forget(closed)!;
    assert.deepEqual([fresh.mainTurnCount, fresh.held.map((p) => p.pairId), feedbackIds(fresh.earlyFeedback)], [0, ['t0'], ['next']]);
    assert.equal(sa.expire(fresh, T0 + 99 * 60_000, G.idleTimeoutMs, o).state, fresh, 'no turn: not idle');
    const empty = sa.release(fresh, T0 + 99 * 60_000, o).state;
    assert.equal(sa.forgettable(empty, T0 + 99 * 60_000, o), true);
    assert.equal(sa.forget(empty), undefined);
  });
});
