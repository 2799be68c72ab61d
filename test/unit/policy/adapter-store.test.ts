import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADAPTER_FORMAT, baseModelRef, untrainedLoraVersion } from '../../../policy/adapter-store.ts';

test('untrainedLoraVersion announces a LoRA version on its base, parent one before, with placeholder metrics', () => {
  const base = { name: 'smol', sha256: 'ab'.repeat(32) };
  const wv = untrainedLoraVersion({ modelId: 'm', version: 3, uri: '/w/m/v3', sha256: 'cd'.repeat(32), base }, 1234);
  assert.deepEqual(wv, {
    modelId: 'm',
    version: 3,
    parentVersion: 2,
    uri: '/w/m/v3',
    sha256: 'cd'.repeat(32),
    format: ADAPTER_FORMAT,
    baseModel: baseModelRef(base),
    metrics: { loss: 0, meanReward: 0, kl: 0, clipFraction: 0, samples: 1, tokens: 1, logprobDrift: 0, droppedStale: 0, steps: 3 },
    createdAt: 1234,
  });
  assert.equal(wv.baseModel, `smol@sha256:${'ab'.repeat(32)}`);
  const before = Date.now();
  assert.ok(untrainedLoraVersion({ modelId: 'm', version: 1, uri: 'u', sha256: 's', base }).createdAt >= before, 'now by default');
});
