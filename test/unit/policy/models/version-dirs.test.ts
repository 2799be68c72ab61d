import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { completeVersions } from '../../../../policy/models/version-dirs.ts';

describe('completeVersions', () => {
  it('lists the versions whose manifest is written, in numeric order, and none for a missing folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ts-versions-'));
    try {
      for (const name of ['v0', 'v2', 'v10', 'v1', 'vx', 'other']) await mkdir(join(dir, name));
      for (const v of ['v0', 'v2', 'v10']) await writeFile(join(dir, v, 'adapter.json'), '{}');
      await writeFile(join(dir, 'v1', 'model.json'), '{}'); // another manifest: not this kind's
      assert.deepEqual(await completeVersions(dir, 'adapter.json'), [0, 2, 10]);
      assert.deepEqual(await completeVersions(dir, 'model.json'), [1]);
      assert.deepEqual(await completeVersions(join(dir, 'absent'), 'adapter.json'), []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
