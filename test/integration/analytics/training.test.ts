/**
 * The training run on the dashboard, from the real ClickHouse: weights rows (the learner's
 * metrics per published version, the mismatch columns of migration 4) read back per version,
 * rewards counted into pass rates per version, split and verdict part, and `/api/training`
 * serving both for the most recently active model or a named one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildDashboardApp, passRateBySplit, trainingByVersion, trainingModels } from '../../../analytics/index.ts';
import type { AnalyticsStore } from '../../../warehouse/index.ts';
import type { Reward, RolloutSplit } from '../../../schemas/index.ts';
import { exampleReward, exampleWeightVersion } from '../../support/fixtures.ts';
import { discardStores, insertRows, rowList, testStore } from './support.ts';

const MODEL = 'smollm2-135m';

describe('the training run per version and the pass rates by split, from ClickHouse', { timeout: 120_000 }, () => {
  let store: AnalyticsStore;

  before(async () => {
    store = await testStore('training');
    const { rows, add } = rowList();
    const base = exampleWeightVersion().metrics;
    // Versions 1–3 of the model; version 2 published twice (a re-sent record): FINAL keeps one.
    const v2 = {
      version: 2,
      parentVersion: 1,
      metrics: { ...base, loss: 0.7, meanReward: 0.3, kl: 0.0021, mismatchKl: 0.0002, tisMean: 0.99, tisTruncated: 0, stepSeconds: 50.25 },
    };
    const versions = [
      {
        version: 1,
        parentVersion: -1,
        metrics: { ...base, loss: 0.9, meanReward: 0.1, kl: 0, mismatchKl: 0.0004, tisMean: 0.98, tisTruncated: 0.01, stepSeconds: 187.5 },
      },
      v2,
      v2,
      {
        version: 3,
        parentVersion: 2,
        metrics: { ...base, loss: 0.5, meanReward: 0.5, kl: 0.0042, mismatchKl: 0.0003, tisMean: 1, tisTruncated: 0, stepSeconds: 48 },
      },
    ];
    for (const v of versions)
      add('weights', exampleWeightVersion({ modelId: MODEL, createdAt: 1_760_000_000_000 + v.version * 1000, ...v }));
    // An older model with one version, active before: listed second.
    add('weights', exampleWeightVersion({ modelId: 'turnstream-tiny', version: 1, createdAt: 1_700_000_000_000 }));
    let n = 0;
    const reward = (version: number, split: RolloutSplit, passed: boolean | null, parts: Reward['parts'], over: Partial<Reward> = {}) => {
      n++;
      add(
        'rewards',
        exampleReward({
          rewardId: `r-${n}`,
          sessionId: `gym-s-${n}`,
          policyModelId: MODEL,
          policyVersion: version,
          passed,
          reward: passed ? 1 : 0,
          parts,
          rollout: { ...exampleReward().rollout!, split },
          createdAt: 1_760_000_000_000 + n,
          ...over,
        }),
      );
    };
    // Version 1: TRAIN 4 rollouts (3 pass; content 3/4, format 3/4 but on different rollouts), DEV 2 (1 passes).
    reward(1, 'TRAIN', true, { content: true, format: true });
    reward(1, 'TRAIN', true, { content: true, format: true });
    reward(1, 'TRAIN', true, { content: true, format: false });
    reward(1, 'TRAIN', false, { content: false, format: true });
    reward(1, 'DEV', true, { content: true, format: true });
    reward(1, 'DEV', false, { content: false, format: false });
    // Version 2: TEST 2 (both pass), an EVAL one without parts (a run from before migration 4), and one without a verdict.
    reward(2, 'TEST', true, { content: true, format: true });
    reward(2, 'TEST', true, { content: true, format: true });
    reward(2, 'EVAL', true, undefined);
    reward(2, 'EVAL', null, undefined);
    // Left out: a rollout no version answered, and another model's.
    reward(-1, 'TRAIN', false, { content: false });
    reward(1, 'TRAIN', true, { content: true }, { policyModelId: 'other-model' });
    await insertRows(store, rows);
  });
  after(async () => {
    await discardStores(store);
  });

  it('lists every model with versions or rollouts, the most recently active first', async () => {
    const models = await trainingModels(store);
    assert.deepEqual(
      models.map((m) => [m.model_id, m.versions, m.rollouts]),
      [
        [MODEL, 3, 11],
        ['other-model', 0, 1],
        ['turnstream-tiny', 1, 0],
      ],
    );
  });

  it('reads each version once, oldest first, with the learner’s metrics and the rollout/trainer mismatch', async () => {
    const v = await trainingByVersion(store, MODEL);
    assert.deepEqual(
      v.map((r) => [r.version, r.parent_version, r.loss, r.mean_reward, r.kl, r.mismatch_kl, r.tis_mean, r.tis_truncated, r.step_seconds]),
      [
        [1, -1, 0.9, 0.1, 0, 0.0004, 0.98, 0.01, 187.5],
        [2, 1, 0.7, 0.3, 0.0021, 0.0002, 0.99, 0, 50.25],
        [3, 2, 0.5, 0.5, 0.0042, 0.0003, 1, 0, 48],
      ],
    );
    assert.deepEqual(
      v.map((r) => [r.clip_fraction, r.samples, r.tokens, r.logprob_drift, r.published_at_ms]),
      [1, 2, 3].map((i) => [0.1, 16, 480, 0.01, 1_760_000_000_000 + i * 1000]),
    );
    assert.deepEqual(await trainingByVersion(store, 'no-such-model'), []);
  });

  it('counts pass rates per version and split, and each verdict part over the rollouts that have it', async () => {
    const rates = await passRateBySplit(store, MODEL);
    assert.deepEqual(
      rates.map((r) => [r.policy_version, r.split, r.rollouts, r.pass_rate, r.mean_reward, r.parts]),
      [
        [1, 'TRAIN', 4, 0.75, 0.75, { content: 0.75, format: 0.75 }],
        [1, 'DEV', 2, 0.5, 0.5, { content: 0.5, format: 0.5 }],
        [2, 'TEST', 2, 1, 1, { content: 1, format: 1 }],
        [2, 'EVAL', 2, 1, 0.5, {}],
      ],
    );
  });

  it('serves both on /api/training: the most recent model by default, a named one, a bad id a 400', async () => {
    const app = buildDashboardApp({ store });
    try {
      const first = (await app.inject({ url: '/api/training' })).json();
      assert.equal(first.model, MODEL);
      assert.deepEqual(
        first.versions.map((v: { version: number }) => v.version),
        [1, 2, 3],
      );
      assert.equal(first.pass_rates.length, 4);
      const tiny = (await app.inject({ url: '/api/training?model=turnstream-tiny' })).json();
      assert.equal(tiny.model, 'turnstream-tiny');
      assert.deepEqual(
        tiny.versions.map((v: { version: number; mismatch_kl: number }) => [v.version, v.mismatch_kl]),
        [[1, 0]],
      );
      assert.deepEqual(tiny.pass_rates, []);
      const bad = await app.inject({ url: '/api/training?model=a%20b' });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().error.param, 'model');
    } finally {
      await app.close();
    }
  });
});
