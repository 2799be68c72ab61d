/**
 * A machine without bubblewrap: making a sandbox installs Debian's `bubblewrap` first when this
 * process runs as root where apt-get exists (the project's machines and CI), as the stack does
 * for ClickHouse, saying so on one line. Anywhere else the error names `sudo apt-get install
 * bubblewrap` (and the unshare sandbox serves where it can).
 *
 * The install happens once: the rollouts of a batch that start together share one install in
 * this process, and processes take turns on a file lock, each looking for bwrap again once it
 * holds the lock. (Four rollouts each running apt-get at once on a fresh machine: one installed
 * it, the others failed on dpkg's lock and stopped the run.)
 */
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { aptInstall, ErrorCodes, findExecutable, runCommand, TurnstreamError, withFileLock, type Runner } from '../../core/index.ts';
import type { SandboxKind } from './sandbox.ts';

export const BUBBLEWRAP_PACKAGES = ['bubblewrap'] as const;

/** The command that installs bubblewrap, named wherever it is missing. */
export const INSTALL_BUBBLEWRAP = 'sudo apt-get install bubblewrap';

/** The lock the processes of this machine take turns on to install bubblewrap (`<path>.lock`). */
export const BUBBLEWRAP_INSTALL_LOCK = join(existsSync('/run/lock') ? '/run/lock' : tmpdir(), 'turnstream-install-bubblewrap');

/** What decides an install. */
export interface BubblewrapDecision {
  /** The sandbox asked for. */
  wanted: SandboxKind | 'auto';
  /** A `bwrap` program was found. */
  found: boolean;
  /** Running as root with apt-get on the PATH, or an install command was given. */
  canApt: boolean;
  /** `SandboxOptions.install`. @default true */
  enabled?: boolean;
}

/** Whether making a sandbox installs bubblewrap first (pure). */
export const shouldInstallBubblewrap = (d: BubblewrapDecision): boolean =>
  d.wanted !== 'unshare' && !d.found && d.canApt && d.enabled !== false;

/**
 * `apt-get install bubblewrap` (the package lists updated once when the install fails without
 * them), or `command` where one is given.
 * @throws TurnstreamError TS_ERR_PREREQUISITE with the installer's last line and the fix
 */
export async function installBubblewrap(runner: Runner = runCommand, command?: readonly string[]): Promise<void> {
  if (!command) {
    await aptInstall(BUBBLEWRAP_PACKAGES, `install it yourself (${INSTALL_BUBBLEWRAP})`, runner);
    return;
  }
  const r = await runner(command[0], command.slice(1));
  if (r.code !== 0) {
    const last = r.output.trim().split('\n').pop()?.trim() ?? '';
    throw new TurnstreamError(
      ErrorCodes.PREREQUISITE,
      `${command.join(' ')} could not install bubblewrap (${last || `exit ${r.code}`}); install it yourself (${INSTALL_BUBBLEWRAP})`,
    );
  }
}

/** What {@link ensureBubblewrap} installs with, and where it looks. */
export interface EnsureBubblewrapOptions {
  /** The `bwrap` program looked for (`SandboxOptions.bwrapPath`). */
  bwrapPath: string;
  /** The command that installs it (`SandboxOptions.installCommand`). @default apt-get */
  command?: readonly string[];
  /** The lock's path (`SandboxOptions.installLock`). @default {@link BUBBLEWRAP_INSTALL_LOCK} */
  lock?: string;
  /** Where the install (and a wait for another process's) is announced. */
  logger: { info(msg: string): void };
  /** Runs the installer. @default {@link runCommand} */
  runner?: Runner;
}

/** One install in flight per set of options in this process. */
const flights = new Map<string, Promise<void>>();

/**
 * bubblewrap installed, once: callers in this process share one flight, and processes take
 * turns on a file lock, each looking for bwrap again once it holds it (another may have
 * installed it meanwhile). A failed flight is forgotten, so a later call tries again.
 * @throws TurnstreamError TS_ERR_PREREQUISITE in one line: the installer's failure, or bwrap
 * still missing after it ran, with the fix
 */
export function ensureBubblewrap(o: EnsureBubblewrapOptions): Promise<void> {
  const key = JSON.stringify([o.bwrapPath, o.command, o.lock]);
  let flight = flights.get(key);
  if (!flight) {
    flight = withFileLock(o.lock ?? BUBBLEWRAP_INSTALL_LOCK, () => installIfMissing(o), {
      what: 'the bubblewrap install lock',
      staleMs: 60_000,
      pollMs: 200,
      onWait: () => o.logger.info('another process is installing bubblewrap: waiting for it'),
    });
    flights.set(key, flight);
    flight.catch(() => flights.delete(key));
  }
  return flight;
}

async function installIfMissing(o: EnsureBubblewrapOptions): Promise<void> {
  if (findExecutable(o.bwrapPath)) return;
  o.logger.info(
    o.command
      ? `bwrap not found: installing bubblewrap with ${o.command.join(' ')}`
      : "bwrap not found: installing Debian's bubblewrap with apt-get (running as root)",
  );
  await installBubblewrap(o.runner, o.command);
  if (!findExecutable(o.bwrapPath))
    throw new TurnstreamError(
      ErrorCodes.PREREQUISITE,
      `bubblewrap was installed, yet ${o.bwrapPath} is still not found; install it yourself (${INSTALL_BUBBLEWRAP})`,
    );
}
