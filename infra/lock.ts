import { mkdirSync, openSync, closeSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { isAlive } from './process.ts';

/**
 * Runs `fn` holding an exclusive lock file, so two `up`/`down` calls on one home (a CLI
 * and a test run) do not start the same service twice. A lock left by a dead process is
 * taken over.
 */
export async function withLock<T>(file: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(file), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const text = readFileSafe(file).trim();
      const holder = Number(text);
      // An empty file is a lock being written right now, unless it stays empty.
      const stale = text === '' ? Date.now() > deadline : !Number.isInteger(holder) || holder <= 0 || !isAlive(holder);
      if (stale) {
        rmSync(file, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new TurnstreamError(
          ErrorCodes.TIMEOUT,
          `another turnstream (pid ${holder}) holds ${file} and did not finish in ${Math.round(timeoutMs / 1000)} s`,
        );
      }
      await sleep(200);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(file, { force: true });
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
