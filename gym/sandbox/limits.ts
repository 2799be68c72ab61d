/**
 * How a sandbox's limits are applied, and how a command's end is read against them. These hold
 * per process (or per command); the caps on a sandbox as a whole, its memory and processes all
 * together, are its cgroup's (rollout-cgroup.ts), with these limits inside them.
 *
 * - CPU seconds, address space, processes and file size: rlimits set by util-linux `prlimit`
 *   inside the sandbox, on the command before it starts (soft and hard alike, so the command
 *   cannot raise them; CPU gets one second of grace between SIGXCPU and SIGKILL).
 * - Processes: RLIMIT_NPROC counts the tasks of one uid, and since Linux 5.14 it counts them in
 *   each user namespace apart, so every sandbox (a user namespace of its own) has its own count,
 *   even when several run as the same uid. The kernel ignores RLIMIT_NPROC for uid 0 (and for
 *   CAP_SYS_ADMIN/CAP_SYS_RESOURCE in the host namespace), so a root process runs its sandboxes
 *   as an unprivileged uid (`runAs`); mapping a non-root uid inside a namespace made by root
 *   would not do, since the kernel checks the host uid, still 0.
 * - Output: kept up to the limit while it streams ({@link OutputCap}); the command is killed
 *   when it writes more, so neither its output nor the parent's memory grows past the limit.
 * - Wall clock: the sandbox's outer process is killed (SIGKILL); the namespace's init dies with
 *   it (bubblewrap's `--die-with-parent`, unshare's `--kill-child`) and the kernel kills every
 *   process left in the PID namespace.
 */
import { constants } from 'node:os';
import { invalidInput } from '../../core/index.ts';
import { DEFAULT_CAPS, DEFAULT_LIMITS, type KilledBy, type SandboxCaps, type SandboxLimits } from './sandbox.ts';

/** `over` applied to `base`, each value given checked to be a positive integer (TS_ERR_INVALID_INPUT naming the field). */
function positiveOver<T extends { [K in keyof T]: number }>(what: string, base: Readonly<T>, over: Partial<T>): T {
  const out: T = { ...base };
  for (const key of Object.keys(base) as (keyof T & string)[]) {
    const value = over[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value <= 0)
      throw invalidInput(`sandbox ${what} ${key} must be a positive integer, got ${String(value)}`, key);
    out[key] = value;
  }
  return out;
}

/** Limits over defaults, each checked to be a positive integer (TS_ERR_INVALID_INPUT naming the field). */
export function resolveLimits(base: Readonly<SandboxLimits> = DEFAULT_LIMITS, over: Partial<SandboxLimits> = {}): SandboxLimits {
  return positiveOver('limit', base, over);
}

/** Caps over defaults, each checked to be a positive integer (TS_ERR_INVALID_INPUT naming the field). */
export function resolveCaps(over: Partial<SandboxCaps> = {}): SandboxCaps {
  return positiveOver('cap', DEFAULT_CAPS, over);
}

/** `prlimit` and its arguments, to put before the command inside the sandbox. */
export function prlimitArgv(prlimit: string, limits: SandboxLimits): string[] {
  return [
    prlimit,
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.processes}`,
    `--fsize=${limits.fileBytes}`,
    '--core=0',
    '--',
  ];
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(constants.signals).map(([name, n]) => [n as number, name as NodeJS.Signals]),
);

/**
 * The exit code and signal of a command from the sandbox's outer process: bubblewrap and the
 * unshare set-up exit 128+n when the command was killed by signal n (as shells do).
 */
export function commandEnd(code: number | null, signal: NodeJS.Signals | null): { exitCode: number | null; signal: NodeJS.Signals | null } {
  if (signal) return { exitCode: null, signal };
  if (code !== null && code > 128) {
    const name = SIGNAL_NAMES.get(code - 128);
    if (name) return { exitCode: null, signal: name };
  }
  return { exitCode: code, signal: null };
}

/** What a failed fork prints: dash, bash, busybox, Python. */
const FORK_FAILED =
  /Cannot fork|fork: (?:retry|Resource temporarily unavailable)|can't fork|BlockingIOError: \[Errno 11\]|can't start new thread/i;
/** What a failed allocation prints: Python, glibc tools, C++ runtimes, shells. */
const ALLOC_FAILED = /MemoryError|Cannot allocate memory|out of memory|memory exhausted|std::bad_alloc/i;

/** What {@link classifyEnd} reads. */
export interface EndFacts {
  /** turnstream killed the command when the wall clock ran out. */
  wall: boolean;
  /** turnstream killed the command when its output passed the limit. */
  output: boolean;
  /** The command's exit status (null when a signal ended it). */
  exitCode: number | null;
  /** The signal that ended the command. */
  signal: NodeJS.Signals | null;
  /** The command's standard error, as kept. */
  stderr: string;
}

/**
 * The limit that stopped a command. Output first (its kill is immediate), then the limits a
 * command runs into before the wall clock ends it: a fork bomb fails to fork long before its
 * wall time, so it reads `pids` even though the wall clock is what killed it. A command that
 * exits 0 by itself was stopped by nothing, whatever it printed.
 */
export function classifyEnd(f: EndFacts): KilledBy | undefined {
  if (f.output) return 'output';
  if (f.exitCode === 0 && !f.wall) return undefined;
  if (FORK_FAILED.test(f.stderr)) return 'pids';
  if (ALLOC_FAILED.test(f.stderr)) return 'memory';
  if (f.wall) return 'wall';
  if (f.signal === 'SIGXCPU') return 'cpu';
  return undefined;
}
