import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../support/stack.ts';

describe('turnstream process <name>', () => {
  it('an unknown processor fails at once with a clear message naming the valid ones', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bin/turnstream.js', 'process', 'nope'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /unknown processor "nope"; expected one of session-assembler, judge, sample-builder/);
  });
});
