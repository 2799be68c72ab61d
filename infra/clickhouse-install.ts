/**
 * A machine without ClickHouse: `npm start` installs Debian's `clickhouse-server` by itself when
 * it runs as root where apt-get exists (the project's machines and CI), saying so on one line.
 * Anywhere else the missing program is reported with the command that installs it.
 *
 * Why the OS package and not embedded ClickHouse (npm `chdb`): the sink, the report, the
 * dashboard and the tests are separate processes that share one ClickHouse over HTTP, while chdb
 * binds its data directory to one process; and the package is small next to chdb (measured here:
 * 10.3 MB downloaded and 81 MB unpacked in about 2 s, against 546 MB and 15 s for `npm i chdb`).
 * chdb (ClickHouse 26.x) serves in the tests to check the DDL and queries on a modern server.
 */
import { spawn } from 'node:child_process';
import { ErrorCodes, TurnstreamError } from '../core/errors.ts';
import { findExecutable } from './prerequisites.ts';

export const CLICKHOUSE_PACKAGES = ['clickhouse-server', 'clickhouse-client'] as const;

export interface InstallDecision {
  /** The stack is about to start ClickHouse itself. */
  needed: boolean;
  /** A ClickHouse server program was found. */
  found: boolean;
  /** The user named the program (`clickhouseBinary`): never replaced by the package's. */
  binaryGiven: boolean;
  /** Running as root with apt-get on the PATH. */
  canApt: boolean;
  /** @default true */
  enabled?: boolean;
}

/** Whether the stack installs the package (pure). */
export const shouldInstallClickhouse = (d: InstallDecision): boolean =>
  d.needed && !d.found && !d.binaryGiven && d.canApt && d.enabled !== false;

/** Root with apt-get. */
export const canUseApt = (): boolean => process.getuid?.() === 0 && findExecutable('apt-get') !== undefined;

/** Runs a command; resolves with its exit code and the end of its output. */
export type Runner = (command: string, args: string[]) => Promise<{ code: number; output: string }>;

const run: Runner = (command, args) =>
  new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    let output = '';
    const keep = (d: Buffer): void => void (output = (output + d.toString()).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => resolve({ code: -1, output: err.message }));
    child.once('close', (code) => resolve({ code: code ?? -1, output }));
  });

/** `apt-get install` of Debian's ClickHouse; the package lists are updated once when the install fails without them. */
export async function installClickhouseWithApt(runner: Runner = run): Promise<void> {
  const install = () => runner('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...CLICKHOUSE_PACKAGES]);
  let r = await install();
  if (r.code !== 0) {
    const update = await runner('apt-get', ['update', '-qq']);
    if (update.code === 0) r = await install();
  }
  if (r.code !== 0) {
    const last = r.output.trim().split('\n').pop() ?? '';
    throw new TurnstreamError(
      ErrorCodes.PREREQUISITE,
      `apt-get could not install ${CLICKHOUSE_PACKAGES.join(' ')} (${last || `exit ${r.code}`}); install ClickHouse, or point CLICKHOUSE_URL at a server`,
    );
  }
}
