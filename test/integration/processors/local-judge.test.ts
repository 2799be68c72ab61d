/**
 * A local judge (the embedded one, or any with `local: true`) takes a fetched batch per call: a
 * pair it cannot judge is found by splitting the batch, dead-lettered alone, and every other pair
 * is judged once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { createEmbeddedJudge, startJudge, type Judge } from '../../../processors/index.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { metricsRegistry } from '../../../core/index.ts';
import type { TurnPair } from '../../../schemas/index.ts';
import { examplePair } from '../../support/fixtures.ts';
import { suiteFamily } from '../../support/suite-family.ts';
import { readAll, waitFor } from './support.ts';

describe('judge: a local judge on fetched batches', { timeout: 120_000 }, () => {
  const family = suiteFamily('local-judge');

  it('one poison pair among 200: one dead letter, 199 judgements, the batch split to find it', async () => {
    const f = family();
    const pairs = Array.from({ length: 200 }, (_, i) => {
      const p = examplePair({ pairId: randomUUID(), sessionId: `s-${i % 20}` });
      return { ...p, turn: { ...p.turn, turnId: p.pairId } };
    });
    const poison = pairs[137].pairId;
    const embedded = createEmbeddedJudge();
    const calls = new Map<string, number>();
    const judge: Judge = {
      id: 'local-test',
      local: true,
      async judge(pair: TurnPair) {
        calls.set(pair.pairId, (calls.get(pair.pairId) ?? 0) + 1);
        if (pair.pairId === poison) throw new TurnstreamError(ErrorCodes.JUDGE_FAILED, 'this pair cannot be judged', { retriable: false });
        return { ...(await embedded.judge(pair)), judgementId: `${pair.pairId}:local-test`, judgeId: 'local-test' };
      },
    };
    await f.producer.sendAll(pairs.map((p) => ({ id: 'pairs' as const, key: p.sessionId, value: p })));
    const h = await startJudge({ kafka: f.kafka, codecs: f.codecs, judge });
    try {
      await h.ready;
      await waitFor('199 judgements and a dead letter', async () => {
        const [j, d] = await Promise.all([readAll(f, 'judgements'), readAll(f, 'dlq')]);
        return j.length >= 199 && d.length >= 1;
      });
      await h.stop();
      const judgements = await readAll(f, 'judgements');
      const dlq = await readAll(f, 'dlq');
      assert.equal(judgements.length, 199, 'each good pair judged once');
      assert.deepEqual(new Set(judgements.map((j) => j.turnId)), new Set(pairs.filter((p) => p.pairId !== poison).map((p) => p.pairId)));
      assert.equal(dlq.length, 1);
      assert.equal(dlq[0].code, ErrorCodes.JUDGE_FAILED);
      assert.match(dlq[0].message, /cannot be judged/);
      assert.equal(h.stats().deadLettered, 1);
      // Tried in its batch, then alone (a per-pair handler would have tried it once); the good pairs
      // of that batch were judged again alone, and their first judgements were dropped with the call.
      assert.equal(calls.get(poison), 2, 'the poison pair was tried in its batch and then alone');
      const again = [...calls].filter(([id, n]) => id !== poison && n === 2).length;
      assert.ok(again >= 1, `the poison's batch-mates were judged again alone (${again})`);
      // Metrics count what was emitted: the failed call's tally was dropped with it.
      const total = async (name: string) =>
        (await metricsRegistry.getSingleMetric(name)!.get()).values
          .filter((v) => v.labels.judge === 'local-test')
          .reduce((n, v) => n + v.value, 0);
      assert.equal(await total('turnstream_judge_judgements_total'), 199);
      assert.equal(
        await total('turnstream_judge_votes_total'),
        judgements.reduce((n, j) => n + j.votes.length, 0),
      );
    } finally {
      await h.stop();
    }
  });
});
