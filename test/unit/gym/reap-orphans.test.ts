/** What a killed parent leaves (processes naming its sandbox folders, the folders) is cleared; a live parent's never. */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { boxOwner, boxPrefix, isAlive, reapOrphans } from '../../../gym/sandbox/reap-orphans.ts';
import { waitFor } from '../../support/wait-for.ts';

describe('reaping what killed parents left', () => {
  it('reads the parent from a sandbox folder’s name', () => {
    assert.equal(boxOwner(`${boxPrefix(1234)}aB3dEf`), 1234);
    assert.equal(boxOwner('turnstream-sandbox-x-1'), undefined);
    assert.equal(boxOwner('other'), undefined);
    assert.equal(isAlive(process.pid), true);
  });

  it('kills the processes and removes the folders of a dead parent, and leaves a live parent’s alone', async () => {
    const root = await mkdtemp(join(tmpdir(), 'ts-reap-'));
    const dead = spawnSync('true').pid as number; // a pid that no longer runs
    assert.equal(isAlive(dead), false);
    const orphanBox = join(root, `${boxPrefix(dead)}abcdef`);
    const liveBox = join(root, `${boxPrefix()}ghijkl`);
    await mkdir(join(orphanBox, 'workspace'), { recursive: true });
    await mkdir(liveBox);
    // Stand-ins for a sandbox's processes: their command lines name the folders. Node itself, by
    // its path: a `python3` found on PATH can be a shell shim whose forked subshells carry the
    // same command line, and count as a second process.
    const sleeper = (box: string) => spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600_000)', box], { stdio: 'ignore' });
    const orphan = sleeper(join(orphanBox, 'workspace'));
    const live = sleeper(liveBox);
    try {
      // they count once their command lines (after the exec) name the folders
      const names = (p: ChildProcess, box: string) => readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').includes(box);
      await waitFor('both stand-ins to name their folders', () => names(orphan, join(orphanBox, 'workspace')) && names(live, liveBox), {
        timeoutMs: 10_000,
        intervalMs: 10,
      });
      const exited = once(orphan, 'exit');
      assert.deepEqual(await reapOrphans(root), { killed: 1, removed: 1 });
      assert.deepEqual(await exited, [null, 'SIGKILL']);
      assert.equal(live.exitCode, null, 'the live parent’s process runs on');
      assert.ok(!existsSync(orphanBox) && existsSync(liveBox));
    } finally {
      orphan.kill('SIGKILL');
      live.kill('SIGKILL');
      await rm(root, { recursive: true, force: true });
    }
  });
});
