/** How limits are set and how a command's end is read against them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyEnd, commandEnd, prlimitArgv, resolveCaps, resolveLimits } from '../../../gym/sandbox/limits.ts';
import { DEFAULT_CAPS, DEFAULT_LIMITS } from '../../../gym/sandbox/sandbox.ts';

describe('sandbox limits', () => {
  it('overrides the defaults field by field and refuses anything but positive integers, naming the field', () => {
    assert.deepEqual(resolveLimits(), DEFAULT_LIMITS);
    assert.deepEqual(resolveLimits(DEFAULT_LIMITS, { wallMs: 500 }), { ...DEFAULT_LIMITS, wallMs: 500 });
    for (const bad of [0, -1, 1.5, Number.NaN, Infinity, '3' as unknown as number]) {
      assert.throws(
        () => resolveLimits(DEFAULT_LIMITS, { processes: bad }),
        (err: Error & { code?: string; param?: string }) => err.code === 'TS_ERR_INVALID_INPUT' && err.param === 'processes',
      );
    }
  });

  it('a sandbox’s caps: 1 GiB and 64 processes for all its processes together by default, each overridable, positive integers only', () => {
    assert.deepEqual(resolveCaps(), { memoryBytes: 1024 ** 3, processes: 64 });
    assert.deepEqual(resolveCaps({ memoryBytes: 2 ** 31 }), { ...DEFAULT_CAPS, memoryBytes: 2 ** 31 });
    for (const bad of [0, -1, 0.5, Number.NaN, '64' as unknown as number]) {
      assert.throws(
        () => resolveCaps({ processes: bad }),
        (err: Error & { code?: string; param?: string }) => err.code === 'TS_ERR_INVALID_INPUT' && err.param === 'processes',
      );
    }
  });

  it('prlimit sets CPU (one second of grace to SIGKILL), address space, processes, file size and no core files, soft and hard', () => {
    assert.deepEqual(
      prlimitArgv('/usr/bin/prlimit', { ...DEFAULT_LIMITS, cpuSeconds: 2, memoryBytes: 1000, processes: 8, fileBytes: 99 }),
      ['/usr/bin/prlimit', '--cpu=2:3', '--as=1000', '--nproc=8', '--fsize=99', '--core=0', '--'],
    );
  });

  it('a status of 128+n from the sandbox is signal n, as a shell reports it; our own kill is a signal as is', () => {
    assert.deepEqual(commandEnd(0, null), { exitCode: 0, signal: null });
    assert.deepEqual(commandEnd(2, null), { exitCode: 2, signal: null });
    assert.deepEqual(commandEnd(128 + 24, null), { exitCode: null, signal: 'SIGXCPU' });
    assert.deepEqual(commandEnd(128 + 9, null), { exitCode: null, signal: 'SIGKILL' });
    assert.deepEqual(commandEnd(null, 'SIGKILL'), { exitCode: null, signal: 'SIGKILL' });
    assert.deepEqual(commandEnd(255, null), { exitCode: 255, signal: null }, 'no signal 127');
  });

  it('names the limit that stopped a command', () => {
    const none = { wall: false, output: false, exitCode: 1, signal: null, stderr: '' } as const;
    assert.equal(classifyEnd({ ...none, output: true, wall: true }), 'output');
    assert.equal(classifyEnd({ ...none, wall: true, exitCode: null, signal: 'SIGKILL' }), 'wall');
    assert.equal(classifyEnd({ ...none, exitCode: null, signal: 'SIGXCPU' }), 'cpu');
    assert.equal(
      classifyEnd({ ...none, wall: true, exitCode: null, signal: 'SIGKILL', stderr: 'sh: 1: Cannot fork\n' }),
      'pids',
      'a fork bomb',
    );
    assert.equal(classifyEnd({ ...none, stderr: 'bash: fork: retry: Resource temporarily unavailable' }), 'pids');
    assert.equal(classifyEnd({ ...none, stderr: 'Traceback (most recent call last):\nMemoryError\n' }), 'memory');
    assert.equal(classifyEnd({ ...none, stderr: 'head: Cannot allocate memory' }), 'memory');
    assert.equal(classifyEnd({ ...none, exitCode: 0, stderr: 'MemoryError (caught)' }), undefined, 'a command that exits 0 by itself');
    assert.equal(classifyEnd(none), undefined, 'an ordinary failure');
  });
});
