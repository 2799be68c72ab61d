import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { withLock } from '../../../infra/lock.ts';
import { isAlive, readLivePid, spawnDetached, stopByPidFile, waitFor } from '../../../infra/process.ts';
import { withTempDir } from '../../support/temp-dir.ts';
import { waitFor as waitUntil } from '../../support/wait-for.ts';

/** Runs `body` in a fresh folder, removed after it. */
const inTmp = <T>(body: (dir: string) => Promise<T> | T): Promise<T> => withTempDir('turnstream-infra-', body);

/** Starts `sh -c script` detached in `dir`, its output in `<name>.log` and its pid in `<name>.pid` there. */
function spawnSh(dir: string, name: string, script: string): { pid: number; pidFile: string; logFile: string } {
  const pidFile = join(dir, `${name}.pid`);
  const logFile = join(dir, `${name}.log`);
  return { pid: spawnDetached({ command: 'sh', args: ['-c', script], cwd: dir, logFile, pidFile }), pidFile, logFile };
}

test('a detached process is recorded, found alive by its marker, and stopped with SIGTERM', () =>
  inTmp(async (dir) => {
    const pidFile = join(dir, 'pids', 'sleeper.pid');
    const pid = spawnDetached({ command: 'sleep', args: ['300'], cwd: dir, logFile: join(dir, 'logs', 'sleeper.log'), pidFile });
    assert.equal(Number(readFileSync(pidFile, 'utf8')), pid);
    assert.equal(readLivePid(pidFile, '300'), pid);
    const t = Date.now();
    assert.equal(await stopByPidFile(pidFile, 5_000, '300'), pid);
    assert.ok(Date.now() - t < 4_000, 'SIGTERM was enough');
    assert.equal(isAlive(pid), false);
    assert.equal(existsSync(pidFile), false);
    assert.equal(await stopByPidFile(pidFile, 5_000), undefined);
  }));

test('a process that ignores SIGTERM is killed after the timeout', () =>
  inTmp(async (dir) => {
    const { pid, pidFile, logFile } = spawnSh(dir, 'stubborn', 'trap "" TERM; echo trapped; while true; do sleep 0.1; done');
    await waitUntil('the trap to be installed', () => readFileSync(logFile, 'utf8').includes('trapped'));
    const t = Date.now();
    assert.equal(await stopByPidFile(pidFile, 700), pid);
    assert.ok(Date.now() - t >= 600, 'waited for the timeout before SIGKILL');
    assert.equal(isAlive(pid), false);
  }));

test('a stale pid file (dead pid, or a live pid of another program) is not ours and is removed', () =>
  inTmp((dir) => {
    const dead = join(dir, 'dead.pid');
    writeFileSync(dead, '999999999\n');
    assert.equal(readLivePid(dead), undefined);
    assert.equal(existsSync(dead), false);
    const other = join(dir, 'other.pid');
    writeFileSync(other, `${process.pid}\n`); // alive, but not a Kafka
    assert.equal(readLivePid(other, '/no/such/server.properties'), undefined);
    assert.equal(existsSync(other), false);
  }));

test('waitFor fails fast with the log tail when the process exits while starting', () =>
  inTmp(async (dir) => {
    const { pid, logFile } = spawnSh(dir, 'crash', 'echo "FATAL: port in use"; exit 1');
    const t = Date.now();
    await assert.rejects(
      waitFor(async () => false, { name: 'Crashy', timeoutMs: 30_000, pid, logFile, intervalMs: 50 }),
      (err: unknown) => {
        assert.ok(err instanceof TurnstreamError);
        assert.equal(err.code, ErrorCodes.UNAVAILABLE);
        assert.match(err.message, /Crashy exited while starting/);
        assert.match(err.message, /FATAL: port in use/);
        return true;
      },
    );
    assert.ok(Date.now() - t < 5_000);
  }));

test('withLock serialises two callers on one home', () =>
  inTmp(async (dir) => {
    const lock = join(dir, 'stack.lock');
    const order: string[] = [];
    let release!: () => void;
    const slow = withLock(lock, 5_000, async () => {
      order.push('a-start');
      await new Promise<void>((r) => (release = r)); // the first caller holds the lock until the test lets go
      order.push('a-end');
    });
    await waitUntil('the first caller to hold the lock', () => order.includes('a-start'));
    // withLock tries at once: the second caller has found the lock taken when the call returns
    const second = withLock(lock, 5_000, async () => void order.push('b'));
    release();
    await Promise.all([slow, second]);
    assert.deepEqual(order, ['a-start', 'a-end', 'b']);
    assert.equal(existsSync(lock), false);
    writeFileSync(lock, '999999999\n'); // left by a dead process
    assert.equal(await withLock(lock, 1_000, async () => 'taken over'), 'taken over');
  }));
