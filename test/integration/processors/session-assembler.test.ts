import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSessionAssembler } from '../../../processors/index.ts';
import { exampleFeedback } from '../../support/fixtures.ts';
import { conversation, family, readAll, waitFor, type Family } from './support.ts';

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
    const fb = exampleFeedback({ feedbackId: randomUUID(), sessionId: 'A', turnId: a[1].turnId, rating: -1, text: 'too long', createdAt: Date.now() });
    await f.producer.sendAll([
      ...a.slice(0, 2).map((t) => ({ id: 'turns' as const, key: 'A', value: t })),
      { id: 'feedback' as const, key: 'A', value: fb },
      ...b.map((t) => ({ id: 'turns' as const, key: 'B', value: t })),
      ...c.map((t) => ({ id: 'turns' as const, key: 'C', value: t })),
    ]);

    const h = await startSessionAssembler({ kafka: f.kafka, codecs: f.codecs, idleTimeoutMs: 4000, expireIntervalMs: 250, quietMs: 1000, feedbackGraceMs: 300 });
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
      await sleep(2000); // nothing more may come
      const pairs = await readAll(f, 'pairs');
      assert.equal(pairs.length, 5);
      const bySession = (s: string) => pairs.filter((p) => p.sessionId === s).sort((x, y) => x.turn.mainTurnIndex - y.turn.mainTurnIndex);
      const pa = bySession('A');
      assert.deepEqual(pa.map((p) => p.pairId), a.map((t) => t.turnId));
      assert.deepEqual(pa.map((p) => p.endMarker), [null, null, 'IDLE_TIMEOUT']);
      assert.deepEqual(pa[0].nextState, [{ role: 'USER', content: 'and Spain?', toolCallId: null }]);
      assert.deepEqual(pa[1].nextState, [
        { role: 'USER', content: 'thanks!', toolCallId: null },
        { role: 'FEEDBACK', content: '👎 (thumbs down) — too long', toolCallId: null },
      ]);
      assert.deepEqual(pa[1].feedback.map((x) => x.feedbackId), [fb.feedbackId]);
      assert.ok(pa.slice(0, 2).every((p) => p.historyVerified));
      assert.deepEqual(pa[2].nextState, []);
      assert.equal(bySession('B').length, 0, 'side turns never pair');
      const pc = bySession('C');
      assert.deepEqual(pc.map((p) => [p.pairId, p.endMarker]), [[c[0].turnId, null], [c[1].turnId, 'SESSION_DONE']]);
      assert.equal(h.stats().deadLettered, 0);

      const states = await readAll(f, 'sessionState');
      const lastA = states.filter((s) => s.sessionId === 'A').at(-1)!;
      assert.equal(lastA.closed, true);
      assert.equal(lastA.closedReason, 'IDLE_TIMEOUT');
    } finally {
      await h.stop();
    }
  });
});
