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
import { aptInstall, runCommand, type Runner } from '../core/index.ts';

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

export { canUseApt, type Runner } from '../core/index.ts';

/** `apt-get install` of Debian's ClickHouse; the package lists are updated once when the install fails without them. */
export async function installClickhouseWithApt(runner: Runner = runCommand): Promise<void> {
  await aptInstall(CLICKHOUSE_PACKAGES, 'install ClickHouse, or point CLICKHOUSE_URL at a server', runner);
}
