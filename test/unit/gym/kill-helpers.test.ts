/** The two backstops of a sandbox's kill: the lifeline watchdog's shell line, and killing whatever holds a command's output. */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { lifelineArgv } from '../../../gym/sandbox/lifeline.ts';
import { killPipeHolders, pipeHolders, stdioPipes } from '../../../gym/sandbox/pipe-holders.ts';
import { waitFor } from '../../support/wait-for.ts';

describe('the lifeline', () => {
  it('a watchdog reading fd 3 that kills the namespace at EOF, then the command without fd 3', () => {
    const [sh, c, script, name] = lifelineArgv();
    assert.deepEqual([sh, c, name], ['sh', '-c', 'sandbox']);
    assert.equal(script, '( { read _ <&3; kill -9 -1; } & ); exec "$@" 3<&-');
    execFileSync('sh', ['-n', '-c', script]);
  });
});

describe('killing what holds a command’s output', () => {
  it('finds every process holding the stdout of a process tree, never this one, and kills them', async () => {
    const child = spawn('sh', ['-c', 'sleep 600 & sleep 600; wait'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const pipes = stdioPipes(child.pid as number);
    assert.equal(pipes.size, 2);
    for (const p of pipes) assert.match(p, /^(pipe|socket):\[\d+\]$/);
    const closed = once(child, 'close');
    try {
      await waitFor('the shell and both sleeps to start', () => pipeHolders(pipes).length >= 3, { timeoutMs: 10_000, intervalMs: 10 });
      assert.equal(pipeHolders(pipes).length, 3, 'the shell and both sleeps hold it');
    } finally {
      assert.equal(killPipeHolders(pipes), 3, 'and are killed');
    }
    await closed; // both sleeps gone too, or the pipes would still be open
    assert.equal(killPipeHolders(new Set()), 0);
    assert.equal(stdioPipes(child.pid as number).size, 0, 'none once gone');
  });
});
