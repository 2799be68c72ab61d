/**
 * A machine without bubblewrap: making a sandbox installs Debian's `bubblewrap` first when this
 * process runs as root where apt-get exists (the project's machines and CI), as the stack does
 * for ClickHouse, saying so on one line. Anywhere else the error names `sudo apt-get install
 * bubblewrap` (and the unshare sandbox serves where it can).
 */
import { aptInstall, runCommand, type Runner } from '../../core/index.ts';
import type { SandboxKind } from './sandbox.ts';

export const BUBBLEWRAP_PACKAGES = ['bubblewrap'] as const;

/** The command that installs bubblewrap, named wherever it is missing. */
export const INSTALL_BUBBLEWRAP = 'sudo apt-get install bubblewrap';

/** What decides an install. */
export interface BubblewrapDecision {
  /** The sandbox asked for. */
  wanted: SandboxKind | 'auto';
  /** A `bwrap` program was found. */
  found: boolean;
  /** Running as root with apt-get on the PATH. */
  canApt: boolean;
  /** `SandboxOptions.install`. @default true */
  enabled?: boolean;
}

/** Whether making a sandbox installs bubblewrap first (pure). */
export const shouldInstallBubblewrap = (d: BubblewrapDecision): boolean =>
  d.wanted !== 'unshare' && !d.found && d.canApt && d.enabled !== false;

/** `apt-get install bubblewrap`; the package lists are updated once when the install fails without them. */
export async function installBubblewrap(runner: Runner = runCommand): Promise<void> {
  await aptInstall(BUBBLEWRAP_PACKAGES, `install it yourself (${INSTALL_BUBBLEWRAP})`, runner);
}
