/**
 * Imported history never enters the live figures: the live funnel, latency, judges, users and
 * sessions count gateway turns (and what was derived from them) only; imported turns are
 * reported under their own source (`report --source imported`, `/dashboard?source=imported`),
 * and the live report names them apart. On the real ClickHouse, rows as the sink writes them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildDashboardApp, buildReport, funnel, latencyPercentiles, overview } from '../../../analytics/index.ts';
import type { AnalyticsStore } from '../../../warehouse/index.ts';
import { exampleJudgement, examplePair, exampleTurn } from '../../support/fixtures.ts';
import { discardStores, insertRows, rowList, testStore } from './support.ts';

describe('live figures vs imported history', { timeout: 120_000 }, () => {
  let store: AnalyticsStore;

  before(async () => {
    store = await testStore('sources');
    const { rows, add } = rowList();
    // Three live turns (200 ms each) and two imported ones (no latency: history has none), each paired and judged.
    const turns = [
      ...[0, 1, 2].map((i) =>
        exampleTurn({
          turnId: `live-${i}`,
          sessionId: 'live-s',
          sessionSource: i ? 'INFERRED' : 'GENERATED',
          latencyMs: 200,
          userId: 'alice',
        }),
      ),
      ...[0, 1].map((i) => exampleTurn({ turnId: `imp-${i}`, sessionId: 'imp-s', sessionSource: 'IMPORTED', latencyMs: 0, userId: 'bob' })),
    ];
    for (const t of turns) {
      add('turns', t);
      add(
        'pairs',
        examplePair({ pairId: t.turnId, sessionId: t.sessionId, userId: t.userId, turn: { ...examplePair().turn, turnId: t.turnId } }),
      );
      add(
        'judgements',
        exampleJudgement({
          judgementId: `${t.turnId}:j`,
          turnId: t.turnId,
          sessionId: t.sessionId,
          userId: t.userId,
          score: t.sessionSource === 'IMPORTED' ? -1 : 1,
        }),
      );
    }
    await insertRows(store, rows);
  });
  after(async () => {
    await discardStores(store);
  });

  it('the live funnel and latency leave imported turns out; the imported source has them', async () => {
    const live = await funnel(store);
    assert.deepEqual([live.turns, live.main, live.pairs, live.judged], [3, 3, 3, 3]);
    const imported = await funnel(store, { source: 'imported' });
    assert.deepEqual([imported.turns, imported.main, imported.pairs, imported.judged], [2, 2, 2, 2]);
    const all = (await latencyPercentiles(store)).find((l) => l.turn_type === 'ALL')!;
    assert.equal(all.turns, 3);
    assert.equal(all.p50, 200, 'imported turns (0 ms) do not pull the live p50 down');
  });

  it('the live overview and report name imported history apart, and report it under its own source', async () => {
    const ov = await overview(store);
    assert.deepEqual(ov.imported && [ov.imported.turns, ov.imported.judged], [2, 2]);
    assert.deepEqual(
      ov.users.map((u) => u.user_id),
      ['alice'],
    );
    assert.deepEqual(
      ov.reward_by_version.map((v) => v.mean_score),
      [1],
      'only live judgements (+1) in the live curve',
    );
    const text = await buildReport(store);
    assert.match(text, /imported history, not in these figures: 2 turns/);
    const importedReport = JSON.parse(await buildReport(store, { source: 'imported', json: true }));
    assert.equal(importedReport.source, 'imported');
    assert.equal(importedReport.funnel.turns, 2);
    assert.deepEqual(
      importedReport.reward_by_version.map((v: { mean_score: number }) => v.mean_score),
      [-1],
    );
  });

  it('the dashboard API takes ?source=imported, and rejects anything else', async () => {
    const app = buildDashboardApp({ store });
    try {
      const live = (await app.inject({ url: '/api/funnel' })).json();
      const imported = (await app.inject({ url: '/api/funnel?source=imported' })).json();
      assert.equal(live.turns, 3);
      assert.equal(imported.turns, 2);
      const latency = (await app.inject({ url: '/api/latency?source=imported' })).json();
      assert.equal(latency.find((l: { turn_type: string }) => l.turn_type === 'ALL').turns, 2);
      const bad = await app.inject({ url: '/api/funnel?source=everything' });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().error.param, 'source');
    } finally {
      await app.close();
    }
  });
});
