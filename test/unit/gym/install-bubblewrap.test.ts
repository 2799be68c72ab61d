/**
 * bubblewrap installed once: callers at once share one install, a bwrap that appeared meanwhile
 * is not installed again, and a failure is one line naming the fix. (Processes taking turns on
 * the file lock, with a real installer and real sandboxes: test/integration/gym/sandbox.test.ts.)
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Runner } from '../../../core/index.ts';
import { ensureBubblewrap } from '../../../gym/sandbox/install-bubblewrap.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';
import { assertEachRejected } from '../../support/settled.ts';

const quiet = { info: () => undefined };

describe('installing bubblewrap once', () => {
  const dir = suiteTempDir('ts-bwrap-install-');

  /** An installer that records its runs and puts an executable bwrap in place, after `delay` of our own turns. */
  const installer = (bwrap: string, runs: string[], code = 0): Runner => {
    return async (cmd, args) => {
      runs.push([cmd, ...args].join(' '));
      await new Promise((r) => setImmediate(r)); // the install takes a while: the other callers arrive meanwhile
      if (code === 0) {
        await writeFile(bwrap, '#!/bin/sh\n');
        await chmod(bwrap, 0o755);
      }
      return { code, output: code === 0 ? '' : 'E: Could not get lock /var/lib/dpkg/lock-frontend\n' };
    };
  };

  it('eight callers at once: one install, and every caller finds bwrap', async () => {
    const bwrap = join(dir(), 'bin-a-bwrap');
    const runs: string[] = [];
    const o = { bwrapPath: bwrap, command: ['fake-install'], lock: join(dir(), 'lock-a'), logger: quiet, runner: installer(bwrap, runs) };
    await Promise.all(Array.from({ length: 8 }, () => ensureBubblewrap(o)));
    assert.deepEqual(runs, ['fake-install']);
    assert.ok(existsSync(bwrap));
    await ensureBubblewrap(o);
    assert.equal(runs.length, 1, 'a later caller does not install again');
  });

  it('a bwrap that another process installed while this one waited for the lock is not installed again', async () => {
    const bwrap = join(dir(), 'bin-b-bwrap');
    await writeFile(bwrap, '#!/bin/sh\n');
    await chmod(bwrap, 0o755);
    const runs: string[] = [];
    await ensureBubblewrap({ bwrapPath: bwrap, lock: join(dir(), 'lock-b'), logger: quiet, runner: installer(bwrap, runs) });
    assert.deepEqual(runs, []);
  });

  it('a failed install: every caller gets the same one line naming the fix, and a later call tries again', async () => {
    const bwrap = join(dir(), 'bin-c-bwrap');
    const runs: string[] = [];
    const o = {
      bwrapPath: bwrap,
      command: ['fake-install', '-y'],
      lock: join(dir(), 'lock-c'),
      logger: quiet,
      runner: installer(bwrap, runs, 100),
    };
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => ensureBubblewrap(o)));
    assert.equal(runs.length, 1);
    assertEachRejected(results, {
      code: 'TS_ERR_PREREQUISITE',
      message:
        'fake-install -y could not install bubblewrap (E: Could not get lock /var/lib/dpkg/lock-frontend); install it yourself (sudo apt-get install bubblewrap)',
    });
    await assert.rejects(ensureBubblewrap(o));
    assert.equal(runs.length, 2, 'the failure was not kept');
  });

  it('an installer that succeeds without leaving bwrap is a failure too', async () => {
    const bwrap = join(dir(), 'bin-d-bwrap');
    const runner: Runner = async () => ({ code: 0, output: '' });
    await assert.rejects(
      ensureBubblewrap({ bwrapPath: bwrap, lock: join(dir(), 'lock-d'), logger: quiet, runner }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'TS_ERR_PREREQUISITE');
        assert.match(
          err.message,
          /^bubblewrap was installed, yet .*bin-d-bwrap is still not found; install it yourself \(sudo apt-get install bubblewrap\)$/,
        );
        return true;
      },
    );
  });
});
