/**
 * Programs this machine has, and Debian packages the project installs itself where it may (as
 * root with apt-get: the project's machines and CI), for ClickHouse, the native TensorFlow build
 * and the gym's sandbox alike. Anywhere else the caller reports the command that installs them.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { ErrorCodes, TurnstreamError } from './errors.ts';

/** The absolute path of an executable: a path as given, else searched on PATH (and sbin). */
export function findExecutable(name: string, path = process.env.PATH ?? ''): string | undefined {
  const candidates =
    isAbsolute(name) || name.includes('/')
      ? [name]
      : [...path.split(delimiter).filter(Boolean), '/usr/local/bin', '/usr/bin', '/usr/sbin', '/bin', '/sbin'].map((d) => join(d, name));
  for (const c of candidates) {
    try {
      if (!statSync(c).isFile()) continue;
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here; try the next
    }
  }
  return undefined;
}

/** Root with apt-get. */
export const canUseApt = (): boolean => process.getuid?.() === 0 && findExecutable('apt-get') !== undefined;

/** Runs a command; resolves with its exit code and the end of its output. */
export type Runner = (command: string, args: string[]) => Promise<{ code: number; output: string }>;

/** The default {@link Runner}: a child process, non-interactive, keeping the last 4,000 characters of its output. */
export const runCommand: Runner = (command, args) =>
  new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    let output = '';
    const keep = (d: Buffer): void => void (output = (output + d.toString()).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => resolve({ code: -1, output: err.message }));
    child.once('close', (code) => resolve({ code: code ?? -1, output }));
  });

/** How long apt-get waits for another apt or dpkg (an unattended upgrade on a fresh machine) to release its lock. */
const APT_LOCK_WAIT = ['-o', 'DPkg::Lock::Timeout=300'];

/**
 * `apt-get install` of Debian packages; the package lists are updated once when the install
 * fails without them. apt-get waits up to 5 minutes where another apt holds dpkg's lock.
 * @param why what the packages are for, in the error (`… install ClickHouse, or …`)
 * @throws TurnstreamError TS_ERR_PREREQUISITE with apt-get's last line
 */
export async function aptInstall(packages: readonly string[], why: string, runner: Runner = runCommand): Promise<void> {
  const install = () => runner('apt-get', [...APT_LOCK_WAIT, 'install', '-y', '-qq', '--no-install-recommends', ...packages]);
  let r = await install();
  if (r.code !== 0) {
    const update = await runner('apt-get', [...APT_LOCK_WAIT, 'update', '-qq']);
    if (update.code === 0) r = await install();
  }
  if (r.code !== 0) {
    const last = r.output.trim().split('\n').pop() ?? '';
    throw new TurnstreamError(
      ErrorCodes.PREREQUISITE,
      `apt-get could not install ${packages.join(' ')} (${last || `exit ${r.code}`}); ${why}`,
    );
  }
}
