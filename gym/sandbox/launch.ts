/**
 * What one command in a sandbox needs, whichever way the sandbox is made, and the shape of the
 * two ways (bubblewrap, unshare): each turns a {@link Launch} into the program line the parent
 * spawns.
 */
import type { SandboxKind } from './sandbox.ts';
import type { SystemMount } from './system-paths.ts';

/** One command to run in a sandbox. */
export interface Launch {
  /** The sandbox's host folders: the workspace, its /tmp, and an empty folder for a root. */
  box: { dir: string; tmp: string; root: string };
  /** The host's system, mounted read-only. */
  system: readonly SystemMount[];
  /** The command's whole environment. */
  env: Readonly<Record<string, string>>;
  /** Working directory inside. */
  cwd: string;
  /** The program line inside, limits first (`prlimit … -- argv`). */
  command: readonly string[];
}

/** A way of making a sandbox. */
export interface SandboxBackend {
  readonly kind: SandboxKind;
  /** The host program line that runs {@link Launch.command} in a fresh sandbox. */
  argv(launch: Launch): string[];
  /** Environment of the host program (the command's own is set inside). */
  readonly hostEnv: Readonly<Record<string, string>>;
}

/** PATH of host programs the sandboxes start (`mount`, `chroot`, …). */
export const HOST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
