/**
 * A judge that takes 30 s per vote — as long as the consumer group's session timeout — costs no
 * rebalance and no duplicate judgement: the runtime pauses the partitions while its pool is full
 * and keeps heartbeating, then resumes them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createLlmJudge, startJudge } from '../../../processors/index.ts';
import { chat, startFakeOpenAI, type FakeServer } from '../../unit/processors/support/fake-openai.ts';
import { examplePair } from '../../support/fixtures.ts';
import { caughtUpOn, family, readAll, waitFor, type Family } from './support.ts';

const VOTE_MS = 30_000;

describe('judge: 30 s per vote', { timeout: 180_000 }, () => {
  let f: Family;
  let server: FakeServer;
  before(async () => {
    f = await family('slow-judge');
    server = await startFakeOpenAI(() => ({ delayMs: VOTE_MS, ...chat('\\boxed{1}') }));
  });
  after(async () => {
    await f?.close();
    await server?.close();
  });

  it('no consumer-group rebalance, partitions paused while the pool is full, exactly one judgement per pair', async () => {
    const pairs = Array.from({ length: 4 }, (_, i) => {
      // Two sessions of two pairs: a session's pairs are judged one after the other.
      const p = examplePair({ pairId: randomUUID(), sessionId: `slow-${i % 2}` });
      return { ...p, turn: { ...p.turn, turnId: p.pairId } };
    });
    await f.producer.sendAll(pairs.map((p) => ({ id: 'pairs' as const, key: p.sessionId, value: p })));
    const judge = createLlmJudge({ baseUrl: server.baseUrl, model: 'slow', mode: 'rl', votes: 1, timeoutMs: 2 * VOTE_MS, retries: 0 });
    // Two rounds of 30 s votes (60 s in all) against the default 30 s session timeout.
    const h = await startJudge({ kafka: f.kafka, codecs: f.codecs, judge, concurrency: 2 });
    await h.ready;
    let sawPaused = false;
    const watch = setInterval(() => void (sawPaused ||= h.stats().pausedPartitions > 0), 200);
    try {
      await waitFor('4 judgements', async () => (await readAll(f, 'judgements')).length >= 4, 150_000);
      await caughtUpOn(f, 'judge', ['pairs']);
      const stats = h.stats();
      const judgements = await readAll(f, 'judgements');
      assert.equal(stats.rebalances, 1, 'only the initial join');
      assert.ok(sawPaused, 'partitions were paused while the 30 s votes ran');
      assert.equal(stats.pausedPartitions, 0, 'and resumed');
      assert.equal(judgements.length, 4);
      assert.deepEqual(new Set(judgements.map((j) => j.turnId)), new Set(pairs.map((p) => p.pairId)));
      assert.ok(
        judgements.every(
          (j) => j.votes.length === 1 && j.votes[0].latencyMs >= VOTE_MS - 100 && j.votes[0].attempts === 1 && j.score === 1,
        ),
      );
      assert.equal(server.requests.length, 4, 'each pair judged once: no re-delivery after a rebalance');
    } finally {
      clearInterval(watch);
      await h.stop();
    }
  });
});
