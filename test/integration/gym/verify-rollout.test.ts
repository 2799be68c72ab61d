/** The command verifier in the real sandbox: exit 0 passes, anything else fails with its exit and last output lines. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSandbox, type Sandbox } from '../../../gym/index.ts';
import { verifyRollout } from '../../../gym/verify/verify-rollout.ts';

describe('verifyRollout with a command', { timeout: 60_000 }, () => {
  let sandbox: Sandbox;
  before(async () => {
    sandbox = await createSandbox({ files: { 'up.txt': 'QUIET WORDS\n' } });
  });
  after(async () => {
    await sandbox?.dispose();
  });

  it('runs it with sh -c in the workspace: exit 0 passes with reward 1', async () => {
    const v = await verifyRollout({ verify: { command: "grep -qx 'QUIET WORDS' up.txt && pwd" } }, { sandbox, finalAnswer: null });
    assert.deepEqual(v, {
      passed: true,
      reward: 1,
      score: 1,
      kind: 'command',
      parts: { command: true },
      detail: 'exit 0; last output:\n/workspace',
    });
  });

  it('a failing command gives reward 0, its exit and its last five output lines', async () => {
    const v = await verifyRollout(
      { verify: { command: 'for i in 1 2 3 4 5 6 7; do echo line $i; done; echo bad >&2; exit 4' } },
      { sandbox, finalAnswer: 'x' },
    );
    assert.equal(v.passed, false);
    assert.equal(v.reward, 0);
    assert.equal(v.detail, 'exit 4; last output:\nline 4\nline 5\nline 6\nline 7\nbad');
  });

  it('runs under limits of its own: an endless verifier is killed at its wall clock and fails', async () => {
    const t0 = Date.now();
    const v = await verifyRollout({ verify: { command: 'while :; do :; done' } }, { sandbox, finalAnswer: null, limits: { wallMs: 500 } });
    assert.equal(v.passed, false);
    assert.match(v.detail, /^killed by SIGKILL \(wall limit\)/);
    assert.ok(Date.now() - t0 < 5000);
  });

  it('an abort rejects with TS_ERR_ABORTED', async () => {
    const ac = new AbortController();
    const run = verifyRollout({ verify: { command: 'sleep 20' } }, { sandbox, finalAnswer: null, signal: ac.signal });
    setTimeout(() => ac.abort(), 200);
    await assert.rejects(run, { code: 'TS_ERR_ABORTED' });
  });
});
