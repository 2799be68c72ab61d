import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { initCheckpoint, readManifest } from '../../../../policy/index.ts';
import { TINY } from '../../../support/tfjs-helpers.ts';

test('initCheckpoint copies a pretrained base when there is one, and random-inits when asked for a shape or seed', async () => {
  const root = await mkdtemp(join(tmpdir(), 'ts-init-'));
  try {
    const base = join(root, 'base');
    const shipped = await initCheckpoint(base, { config: TINY, seed: 3 });
    const store = join(root, 'store');
    const v0 = await initCheckpoint(store, { base });
    assert.equal(v0.sha256, shipped.sha256, 'the base checkpoint is copied byte for byte');
    assert.equal((await readManifest(v0.uri)).baseModel, 'random-init(seed=3)');
    const again = await initCheckpoint(store, { base });
    assert.equal(again.sha256, v0.sha256, 'idempotent');
    const random = await initCheckpoint(join(root, 'other'), { base, config: TINY, seed: 4 });
    assert.notEqual(random.sha256, shipped.sha256, 'an explicit config/seed means a random init');
    const noBase = await initCheckpoint(join(root, 'none'), { base: join(root, 'missing'), config: undefined });
    assert.match((await readManifest(noBase.uri)).baseModel ?? '', /^random-init/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
