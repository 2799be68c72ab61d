import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';

/** A long-running program started in the background. */
export interface DetachedSpec {
  command: string;
  args: string[];
  cwd: string;
  /** stdout and stderr are appended here. */
  logFile: string;
  /** The pid is written here. */
  pidFile: string;
  /**
   * A string that must appear in the process's command line for a pid from `pidFile` to
   * count as ours (pids are reused after a reboot). @default no check
   */
  marker?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts a program in its own process group, detached from ours, so it outlives the
 * `turnstream` command that started it; returns its pid.
 */
export function spawnDetached(spec: DetachedSpec): number {
  mkdirSync(dirname(spec.logFile), { recursive: true });
  mkdirSync(dirname(spec.pidFile), { recursive: true });
  const fd = openSync(spec.logFile, 'a');
  try {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    if (child.pid === undefined) {
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `could not start ${spec.command}; see ${spec.logFile}`);
    }
    child.unref();
    writeFileSync(spec.pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** True when a process with this pid exists (and is not a zombie). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // A zombie still answers kill(0); its state in /proc/<pid>/stat is Z.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return true; // no /proc (macOS): trust kill(0)
  }
}

/** The command line of a pid, or undefined where /proc is not available. */
function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return undefined;
  }
}

/** The live pid recorded in `pidFile`, or undefined (a stale file is removed). */
export function readLivePid(pidFile: string, marker?: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  const alive = Number.isInteger(pid) && pid > 0 && isAlive(pid);
  const cmd = alive ? commandLine(pid) : undefined;
  if (!alive || (marker !== undefined && cmd !== undefined && !cmd.includes(marker))) {
    rmSync(pidFile, { force: true });
    return undefined;
  }
  return pid;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig); // the whole group we started
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/**
 * Stops the process of `pidFile`: SIGTERM, then SIGKILL after `timeoutMs`. Removes the
 * pid file. Returns the pid that was stopped, or undefined if none was running.
 */
export async function stopByPidFile(pidFile: string, timeoutMs: number, marker?: string): Promise<number | undefined> {
  const pid = readLivePid(pidFile, marker);
  if (pid === undefined) return undefined;
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    signal(pid, 'SIGKILL');
    while (isAlive(pid)) await sleep(50);
  }
  rmSync(pidFile, { force: true });
  return pid;
}

/** The last lines of a log file, for error messages. */
export function tailFile(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** How to wait for a service. */
export interface WaitOptions {
  /** What is awaited, for messages. */
  name: string;
  timeoutMs: number;
  /** Poll interval. @default 250 */
  intervalMs?: number;
  /** The process (or processes) being awaited: the wait fails at once when one exits. */
  pid?: number | readonly number[];
  /** Shown (tail) when the wait fails. */
  logFile?: string;
  /** Called every few seconds while waiting, with the elapsed ms. */
  onWaiting?: (elapsedMs: number) => void;
}

/** Polls `check` until it returns true; fails with UNAVAILABLE on timeout or process exit. */
export async function waitFor(check: () => Promise<boolean>, o: WaitOptions): Promise<void> {
  const start = Date.now();
  let lastReport = start;
  for (;;) {
    if (await check().catch(() => false)) return;
    const now = Date.now();
    const logHint = o.logFile ? `\nlast lines of ${o.logFile}:\n${tailFile(o.logFile)}` : '';
    const exited = (typeof o.pid === 'number' ? [o.pid] : (o.pid ?? [])).find((pid) => !isAlive(pid));
    if (exited !== undefined) {
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `${o.name} exited while starting (pid ${exited}).${logHint}`, { retriable: false });
    }
    if (now - start > o.timeoutMs) {
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `${o.name} not healthy after ${Math.round(o.timeoutMs / 1000)} s.${logHint}`, {
        retriable: false,
      });
    }
    if (o.onWaiting && now - lastReport >= 5_000) {
      lastReport = now;
      o.onWaiting(now - start);
    }
    await sleep(o.intervalMs ?? 250);
  }
}
