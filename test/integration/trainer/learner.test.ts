import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { after, describe, it } from 'node:test';
import { loadCheckpoint, WeightStore } from '../../../policy/index.ts';
import { caughtUp } from '../../support/caught-up.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';
import { family, type Family } from '../../support/topic-family.ts';
import { waitFor } from '../../support/wait-for.ts';
import { assertExactlyOnce, publishedVersions, spawnTrain, stopChild, tinyCheckpoint, yesNoSample } from './support.ts';

describe('learner on real Kafka', { timeout: 400000 }, () => {
  const dir = suiteTempDir('ts-learner-');
  let f: Family | undefined;
  after(async () => {
    await f?.close();
  });

  it('publishes versions with metrics; after kill -9 it resumes from the last published version and never re-trains a committed batch', async () => {
    const { kafka, codecs, producer, prefix } = (f = await family('learner', 2));
    const weightsDir = await tinyCheckpoint(dir(), 'weights');
    const versions = () => publishedVersions({ kafka, codecs });

    // Phase 1: 8 samples from 4 users → two full batches → v1, v2.
    await producer.sendAll(
      Array.from({ length: 8 }, (_, i) => ({
        id: 'samples' as const,
        key: `s${i % 3}`,
        value: yesNoSample(i, { sessionId: `s${i % 3}`, userId: `u${i % 4}` }),
      })),
    );
    const first = await spawnTrain({ prefix }, weightsDir);
    await waitFor('v2', async () => (await versions()).some((v) => v.version === 2), { timeoutMs: 120_000, intervalMs: 500 });
    await stopChild(first, 'SIGKILL');
    const published = await versions();
    assert.deepEqual(
      published.map((v) => v.version),
      [1, 2],
      'nothing else was published',
    );

    // A crash between writing a checkpoint and publishing it leaves an unpublished folder.
    const store = new WeightStore(weightsDir);
    await cp(store.path('turnstream-tiny', 2), store.path('turnstream-tiny', 3), { recursive: true });

    // Phase 2: 8 more, user "hog" sends 6 of them: capped at 2 per batch of 4.
    const hog = Array.from({ length: 8 }, (_, j) => yesNoSample(8 + j, { sessionId: `s${(8 + j) % 3}`, userId: j < 6 ? 'hog' : `u${j}` }));
    await producer.sendAll(hog.map((s) => ({ id: 'samples' as const, key: s.sessionId, value: s })));
    const second = await spawnTrain({ prefix }, weightsDir);
    try {
      await waitFor('all 16 samples trained', async () => (await versions()).reduce((a, v) => a + v.metrics.samples, 0) >= 16, {
        timeoutMs: 120_000,
        intervalMs: 500,
      });
      await caughtUp(kafka, `${prefix}turnstream.learner.turnstream-tiny`, [codecs.topic('samples')]);
    } finally {
      await stopChild(second, 'SIGTERM');
    }

    const all = await versions();
    const n = all.length;
    assertExactlyOnce(all, 16);
    assert.deepEqual(
      all.map((v) => v.metrics.steps),
      Array.from({ length: n }, (_, i) => i + 1),
      'one step per version, counted across the restart',
    );
    assert.ok(n >= 5, `the user cap split the hog's samples over more batches (got ${n} versions)`);
    for (const v of all) {
      for (const k of ['loss', 'meanReward', 'kl', 'clipFraction', 'logprobDrift'] as const)
        assert.ok(Number.isFinite(v.metrics[k]), `${k} of v${v.version}`);
      assert.ok(v.metrics.tokens > 0 && v.metrics.samples > 0 && v.metrics.samples <= 4);
      assert.equal(v.metrics.droppedStale, 0);
    }
    // v3 is the re-trained one, not the leftover copy of v2.
    const v3 = all.find((v) => v.version === 3)!;
    const { model, manifest } = await loadCheckpoint(v3.uri, { expectedSha256: v3.sha256 });
    model.dispose();
    assert.equal(manifest.parentVersion, 2);
    assert.notEqual(v3.sha256, published[1].sha256);
  });
});
