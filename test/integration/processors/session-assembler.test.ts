import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startSessionAssembler } from '../../../processors/index.ts';
import { exampleFeedback } from '../../support/fixtures.ts';
import { caughtUpOn, conversation, family, readAll, waitFor, type Family } from './support.ts';

describe('session assembler on Kafka', { timeout: 240_000 }, () => {
  let f: Family;
  before(async () => {
    f = await family('session-assembler');
  });
  after(() => f?.close());

  it('pairs main turns (default turn type), never side turns, closes on sessionDone and on a short idle timeout, dedupes', async () => {
    // A: a client without X-Turn-Type → MAIN turns; 3 turns, feedback on the second; left idle.
    const a = conversation('A', ['hi', 'and Spain?', 'thanks!']);
    // B: side turns only (heartbeats): recorded, never paired.
    const b = conversation('B', ['heartbeat', 'heartbeat', 'heartbeat'], () => ({ turnType: 'SIDE' }));
    // C: the client ends the session on its second turn.
    const c = conversation('C', ['q1', 'q2'], (i) => ({ sessionDone: i === 1 }));
    const fb = exampleFeedback({
      feedbackId: randomUUID(),
      sessionId: 'A',
      turnId: a[1].turnId,
      rating: -1,
      text: 'too long',
      createdAt: Date.now(),
    });
    await f.producer.sendAll([
      ...a.slice(0, 2).map((t) => ({ id: 'turns' as const, key: 'A', value: t })),
      { id: 'feedback' as const, key: 'A', value: fb },
      ...b.map((t) => ({ id: 'turns' as const, key: 'B', value: t })),
      ...c.map((t) => ({ id: 'turns' as const, key: 'C', value: t })),
    ]);

    const h = await startSessionAssembler({
      kafka: f.kafka,
      codecs: f.codecs,
      idleTimeoutMs: 4000,
      expireIntervalMs: 250,
      quietMs: 1000,
      feedbackGraceMs: 300,
    });
    await h.ready;
    try {
      // Turns and feedback are two topics: there is no order between them, so (as live, where
      // the user's 👎 comes before their next message) the next turn is sent after the feedback
      // has been read.
      await waitFor('A0, C0, C1 paired', async () => (await readAll(f, 'pairs')).length >= 3);
      await waitFor('the feedback read', async () => h.stats().consumed >= 8);
      await f.producer.sendAll([
        { id: 'turns' as const, key: 'A', value: { ...a[2], requestedAt: Date.now(), completedAt: Date.now() + 5 } },
        { id: 'turns' as const, key: 'A', value: a[1] }, // a duplicate delivery
      ]);
      await waitFor('5 pairs', async () => (await readAll(f, 'pairs')).length >= 5);
      await caughtUpOn(f, 'session-assembler', ['turns', 'feedback']);
      const pairs = await readAll(f, 'pairs');
      assert.equal(pairs.length, 5);
      const bySession = (s: string) => pairs.filter((p) => p.sessionId === s).sort((x, y) => x.turn.mainTurnIndex - y.turn.mainTurnIndex);
      const pa = bySession('A');
      assert.deepEqual(
        pa.map((p) => p.pairId),
        a.map((t) => t.turnId),
      );
      assert.deepEqual(
        pa.map((p) => p.endMarker),
        [null, null, 'IDLE_TIMEOUT'],
      );
      assert.deepEqual(pa[0].nextState, [{ role: 'USER', content: 'and Spain?', toolCallId: null }]);
      assert.deepEqual(pa[1].nextState, [
        { role: 'USER', content: 'thanks!', toolCallId: null },
        { role: 'FEEDBACK', content: '👎 (thumbs down) — too long', toolCallId: null },
      ]);
      assert.deepEqual(
        pa[1].feedback.map((x) => x.feedbackId),
        [fb.feedbackId],
      );
      assert.ok(pa.slice(0, 2).every((p) => p.historyVerified));
      assert.deepEqual(pa[2].nextState, []);
      assert.equal(bySession('B').length, 0, 'side turns never pair');
      const pc = bySession('C');
      assert.deepEqual(
        pc.map((p) => [p.pairId, p.endMarker]),
        [
          [c[0].turnId, null],
          [c[1].turnId, 'SESSION_DONE'],
        ],
      );
      assert.equal(h.stats().deadLettered, 0);

      const states = await readAll(f, 'sessionState');
      const lastA = states.filter((s) => s.sessionId === 'A').at(-1)!;
      assert.equal(lastA.closed, true);
      assert.equal(lastA.closedReason, 'IDLE_TIMEOUT');
    } finally {
      await h.stop();
    }
  });

  it('a large backlog goes through: fast handlers resume paused partitions, big transactions are split under the broker limit', async () => {
    const g = await family('assembler-backlog');
    try {
      const long = 'Context. '.repeat(250); // ~2 KB in every request: session states of 20+ KB
      const sessions = Array.from({ length: 120 }, (_, s) =>
        conversation(
          `bl${s}`,
          Array.from({ length: 10 }, (_, i) => `${long} question ${i}`),
          (i) => ({ sessionDone: i === 9 }),
        ),
      );
      const events = sessions.flat().map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t }));
      for (let i = 0; i < events.length; i += 20) await g.producer.sendAll(events.slice(i, i + 20));
      const h = await startSessionAssembler({ kafka: g.kafka, codecs: g.codecs, feedbackGraceMs: 0 });
      await h.ready;
      try {
        await waitFor('1200 pairs', async () => (await readAll(g, 'pairs')).length >= 1200, 90_000);
        await caughtUpOn(g, 'session-assembler', ['turns', 'feedback']);
        const pairs = await readAll(g, 'pairs');
        assert.equal(pairs.length, 1200);
        assert.equal(new Set(pairs.map((p) => p.pairId)).size, 1200);
        assert.equal(h.stats().pausedPartitions, 0);
      } finally {
        await h.stop();
      }
    } finally {
      await g.close();
    }
  });

  it('nothing lost in a backlog: a 👎 produced after the next turn, or before its own turn, still ends up in the pair', async () => {
    const g = await family('late-feedback');
    try {
      const hourAgo = Date.now() - 3600_000;
      const times = (i: number) => ({ requestedAt: hourAgo + i * 1000, completedAt: hourAgo + i * 1000 + 200 });
      // L: the user's 👎 on L0 is written after L1 (the two topics have no order between them).
      const l = conversation('L', ['hi', 'what?', 'bye'], (i) => ({ ...times(i), sessionDone: i === 2 }));
      const lateFb = exampleFeedback({
        feedbackId: randomUUID(),
        sessionId: 'L',
        turnId: l[0].turnId,
        rating: -1,
        text: 'wrong',
        createdAt: l[1].completedAt + 300,
      });
      // M: a 👍 naming M0 is on the feedback topic before M0 is on the turns topic (an outbox drained late).
      const m = conversation('M', ['q', 'ok'], (i) => ({ ...times(i), sessionDone: i === 1 }));
      const earlyFb = exampleFeedback({
        feedbackId: randomUUID(),
        sessionId: 'M',
        turnId: m[0].turnId,
        rating: 1,
        text: null,
        createdAt: m[0].completedAt + 100,
      });
      // N: feedback that names no turn, given between N0 and N1 and read after N1: it is about N0.
      const n = conversation('N', ['a', 'b'], (i) => ({ ...times(i), sessionDone: i === 1 }));
      const anonFb = exampleFeedback({
        feedbackId: randomUUID(),
        sessionId: 'N',
        turnId: null,
        rating: -1,
        text: null,
        createdAt: n[0].completedAt + 100,
      });
      await g.producer.sendAll([{ id: 'feedback' as const, key: 'M', value: earlyFb }]);
      await g.producer.sendAll([...l, ...m, ...n].map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t })));
      await g.producer.sendAll([
        { id: 'feedback' as const, key: 'L', value: lateFb },
        { id: 'feedback' as const, key: 'N', value: anonFb },
      ]);

      // The whole backlog is there before the assembler starts; the grace period is the default.
      const h = await startSessionAssembler({ kafka: g.kafka, codecs: g.codecs, quietMs: 1000 });
      await h.ready;
      try {
        await waitFor('7 pairs', async () => (await readAll(g, 'pairs')).length >= 7, 60_000);
        await caughtUpOn(g, 'session-assembler', ['turns', 'feedback']);
        const pairs = await readAll(g, 'pairs');
        assert.equal(pairs.length, 7);
        const of = (id: string) => pairs.find((p) => p.pairId === id)!;
        assert.deepEqual(
          of(l[0].turnId).feedback.map((x) => x.feedbackId),
          [lateFb.feedbackId],
        );
        assert.deepEqual(of(l[0].turnId).nextState, [
          { role: 'USER', content: 'what?', toolCallId: null },
          { role: 'FEEDBACK', content: '👎 (thumbs down) — wrong', toolCallId: null },
        ]);
        assert.deepEqual(
          of(m[0].turnId).feedback.map((x) => x.feedbackId),
          [earlyFb.feedbackId],
        );
        assert.deepEqual(
          of(n[0].turnId).feedback.map((x) => x.feedbackId),
          [anonFb.feedbackId],
        );
        for (const t of [l[1], l[2], m[1], n[1]]) assert.deepEqual(of(t.turnId).feedback, [], 'feedback reaches only its own turn');
        assert.equal(h.stats().deadLettered, 0);
      } finally {
        await h.stop();
      }
    } finally {
      await g.close();
    }
  });
  it('old history: pairs released in the tick that forgets a closed session still go out', async () => {
    const g = await family('closed-retention');
    try {
      const twoDaysAgo = Date.now() - 2 * 24 * 3600 * 1000;
      const d = conversation('D', ['q1', 'q2'], (i) => ({
        sessionDone: i === 1,
        requestedAt: twoDaysAgo + i * 10,
        completedAt: twoDaysAgo + i * 10 + 5,
      }));
      await g.producer.sendAll(d.map((t) => ({ id: 'turns' as const, key: 'D', value: t })));
      // Event time is two days old, so when the clock falls back to wall time the held pairs'
      // grace and the closed session's retention pass in the same punctuator tick.
      const h = await startSessionAssembler({
        kafka: g.kafka,
        codecs: g.codecs,
        feedbackGraceMs: 300,
        closedRetentionMs: 1000,
        quietMs: 500,
        expireIntervalMs: 200,
      });
      await h.ready;
      try {
        await waitFor('both pairs of the closed session', async () => (await readAll(g, 'pairs')).length >= 2, 30_000);
      } finally {
        await h.stop();
      }
      const pairs = (await readAll(g, 'pairs')).sort((x, y) => x.turn.mainTurnIndex - y.turn.mainTurnIndex);
      assert.deepEqual(
        pairs.map((p) => p.pairId),
        d.map((t) => t.turnId),
      );
      assert.deepEqual(
        pairs.map((p) => p.endMarker),
        [null, 'SESSION_DONE'],
      );
    } finally {
      await g.close();
    }
  });
});
