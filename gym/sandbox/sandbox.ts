/**
 * A sandbox per rollout: one fresh temporary workspace that commands run in, behind Linux
 * namespaces (bubblewrap, or util-linux `unshare` where bubblewrap cannot run). Inside, the
 * system is read-only, the workspace (and a private /tmp) the only writable paths, the network
 * and the host's processes out of sight, and every command runs under limits on CPU time,
 * memory, processes, file size, output and wall time, and the sandbox as a whole (all its
 * processes together) under caps on memory and processes, a cgroup's, where the host allows
 * one. Each command runs in namespaces of its own, which die with it: nothing it started
 * outlives it. Where no sandbox can be made,
 * creating one fails with TS_ERR_PREREQUISITE; nothing ever runs on the host instead.
 */
import type { Logger } from '../../core/index.ts';

/** The two ways of making a sandbox, best first. */
export type SandboxKind = 'bwrap' | 'unshare';

/** The limit that stopped a command (or that it ran into, for `memory` and `pids`). */
export type KilledBy = 'wall' | 'cpu' | 'memory' | 'output' | 'pids';

/** Where the workspace is seen inside the sandbox (and the working directory of every command). */
export const SANDBOX_WORKSPACE = '/workspace';

/** The limits every command runs under. */
export interface SandboxLimits {
  /** Wall-clock time, in milliseconds, after which the command and everything it started are killed. @default 30000 */
  wallMs: number;
  /** CPU seconds per process (RLIMIT_CPU): SIGXCPU at the limit, SIGKILL one second later. @default 10 */
  cpuSeconds: number;
  /** Address space per process, in bytes (RLIMIT_AS): allocations beyond it fail. Inside the sandbox's memory cap ({@link SandboxCaps}). @default 1073741824 (1 GiB) */
  memoryBytes: number;
  /** Processes and threads alive at once in one command's sandbox (RLIMIT_NPROC, counted in its own user namespace). Inside the sandbox's process cap ({@link SandboxCaps}). @default 64 */
  processes: number;
  /** The largest file a command may write, in bytes (RLIMIT_FSIZE): SIGXFSZ beyond it. @default 67108864 (64 MiB) */
  fileBytes: number;
  /** Bytes of stdout and stderr kept, both together; the command is killed when it writes more. @default 1048576 (1 MiB) */
  outputBytes: number;
}

/**
 * Caps on a whole sandbox (a rollout): every process of every command together, concurrent
 * commands included, held by a cgroup of the sandbox's own where the host allows one
 * (rollout-cgroup.ts). Where it does not, only each process's {@link SandboxLimits} hold, and
 * {@link Sandbox.caps} says so.
 */
export interface SandboxCaps {
  /**
   * Memory of all the sandbox's processes together (RAM, and swap where the kernel accounts it),
   * in bytes: cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`. Past it the kernel reclaims,
   * then kills a process of the sandbox (the command ends with `killedBy: 'memory'`), never one
   * of the host's. @default 1073741824 (1 GiB)
   */
  memoryBytes: number;
  /** Processes and threads of the sandbox alive at once, its own included (3 a command): `pids.max`. Forks past it fail. @default 64 */
  processes: number;
}

/** How a sandbox's caps are kept on this host. */
export interface CapsReport {
  /**
   * `cgroup-v2` or `cgroup-v1`: the sandbox's processes share a cgroup that holds
   * {@link SandboxCaps}; `per-process`: no cgroup, only each process's {@link SandboxLimits} hold.
   */
  by: 'cgroup-v2' | 'cgroup-v1' | 'per-process';
  /** Where the rollout cgroups are made, or why there are none. */
  detail: string;
  /** The folders the sandboxes' cgroups are made in (one for both controllers on v2); absent where per-process. */
  folders?: { memory: string; pids: string };
}

/** A sandbox's caps and how they are kept. */
export type SandboxCapsInForce = CapsReport & Partial<SandboxCaps>;

/** What a sandbox's processes use and used, all together (from its cgroup). */
export interface SandboxUsage {
  /** Memory charged now, in bytes. */
  memoryBytes: number;
  /** The most memory charged at once since the sandbox was made (v2 needs Linux 5.19 for it). */
  memoryPeakBytes?: number;
  /** Processes the kernel killed for the memory cap. */
  oomKills: number;
  /** Processes and threads now. */
  processes: number;
  /** The most processes and threads at once (where the kernel reports it). */
  processesPeak?: number;
}

/** Options of {@link createSandbox}. */
export interface SandboxOptions {
  /** Limits for every command; each command may override some of them. @default {@link DEFAULT_LIMITS} */
  limits?: Partial<SandboxLimits>;
  /** Caps on the sandbox as a whole (all its processes together), held by a cgroup of its own. @default {@link DEFAULT_CAPS} */
  caps?: Partial<SandboxCaps>;
  /** `auto`: a cgroup per sandbox where the host allows one (v2, else v1); `off`: per-process limits only. @default 'auto' */
  cgroup?: 'auto' | 'off';
  /** Files the workspace starts with: relative path → content (folders are made as needed). @default {} */
  files?: Readonly<Record<string, string>>;
  /** Which sandbox to make; `auto` takes bubblewrap where it runs, else `unshare`. @default 'auto' */
  kind?: SandboxKind | 'auto';
  /**
   * Install Debian's `bubblewrap` with apt-get when `bwrap` is missing and this process runs as
   * root where apt-get exists (as the stack installs ClickHouse). @default true
   */
  install?: boolean;
  /**
   * The command that installs bubblewrap where `bwrap` is missing, run once (one at a time across
   * processes) before the first sandbox. Given, it runs whoever this process is.
   * @default apt-get install bubblewrap, as root where apt-get exists
   */
  installCommand?: readonly string[];
  /** The file lock processes take turns on to install bubblewrap (`<path>.lock`). @default '/run/lock/turnstream-install-bubblewrap' (os.tmpdir() without /run/lock) */
  installLock?: string;
  /** Host folder the sandbox's temporary folder is made in; must be reachable by `runAs`. @default os.tmpdir() */
  tmpRoot?: string;
  /**
   * The unprivileged host user and group the sandbox runs as when this process is root: the
   * kernel ignores RLIMIT_NPROC for uid 0, so a root sandbox would have no process limit.
   * Ignored when not root (the sandbox runs as the current user). @default { uid: 2000000000, gid: 2000000000 }
   */
  runAs?: { uid: number; gid: number };
  /**
   * Host paths mounted read-only at the same place inside (a symlink is recreated as the same
   * symlink). Paths that do not exist on the host are left out.
   * @default ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc']
   */
  systemPaths?: readonly string[];
  /** Environment of every command, over the defaults (PATH, HOME=/workspace, TMPDIR=/tmp, LANG=C.UTF-8). @default {} */
  env?: Readonly<Record<string, string>>;
  /** The `bwrap` program. @default 'bwrap' (searched on PATH) */
  bwrapPath?: string;
  /** The `python3` of {@link Sandbox.python}, as found inside (on the sandbox's PATH, or absolute). @default 'python3' */
  python?: string;
  /** Where installing bubblewrap is announced. @default a logger named `gym-sandbox` */
  logger?: Pick<Logger, 'info'>;
}

/** Options of one command. */
export interface ExecOptions {
  /** Bytes given to the command on stdin. @default none (stdin is /dev/null) */
  stdin?: string | Uint8Array;
  /** Environment over the sandbox's. @default {} */
  env?: Readonly<Record<string, string>>;
  /** Working directory, relative to the workspace (confined to it). @default the workspace */
  cwd?: string;
  /** Limits over the sandbox's, for this command. @default the sandbox's */
  limits?: Partial<SandboxLimits>;
  /** Aborting kills the command and rejects with TS_ERR_ABORTED. @default none */
  signal?: AbortSignal;
}

/** How a command ended. */
export interface ExecResult {
  /** The exit status, or null where the command was killed by a signal. */
  exitCode: number | null;
  /**
   * The signal that ended the command: from turnstream's kill (SIGKILL), or as the sandbox
   * reports it (status 128+n, as a shell does; a command that exits 128+n itself reads the same).
   */
  signal: NodeJS.Signals | null;
  /** Standard output (UTF-8), up to the output limit. */
  stdout: string;
  /** Standard error (UTF-8), up to the output limit. */
  stderr: string;
  /** Output was cut at the output limit. */
  truncated: boolean;
  /** The wall clock ran out and the command was killed. */
  timedOut: boolean;
  /**
   * The limit that stopped the command: `wall`, `output` (turnstream killed it), `cpu`
   * (SIGXCPU); `memory` and `pids` where it failed to allocate or fork, read from the messages
   * shells and runtimes print then (best effort: a silent failure reads as its exit or `wall`).
   */
  killedBy?: KilledBy;
  /** Wall time of the command, in milliseconds. */
  wallMs: number;
}

/** One sandbox: a workspace and the commands run in it. */
export interface Sandbox {
  /** How this sandbox is made. */
  readonly kind: SandboxKind;
  /** The workspace's folder on the host (for inspection; use the methods to read and write). */
  readonly hostWorkspace: string;
  /** The limits commands run under unless they say otherwise. */
  readonly limits: Readonly<SandboxLimits>;
  /** The caps on the sandbox as a whole, and how they are kept (`per-process`: not at all, only {@link limits}). */
  readonly caps: Readonly<SandboxCapsInForce>;
  /** What its processes use and used, all together; undefined without a cgroup (or once disposed). */
  usage(): SandboxUsage | undefined;
  /** Runs a program (searched on the sandbox's PATH) with its arguments. */
  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /** Runs `sh -c command` in the workspace: the bash tool, and a task's `verify.command`. */
  sh(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Runs Python code with the sandbox's `python3 -I -c`: the code tool. */
  python(code: string, options?: ExecOptions): Promise<ExecResult>;
  /** A workspace file as UTF-8 (relative path; `..`, absolute paths and escaping symlinks are refused). */
  readFile(path: string, options?: { maxBytes?: number }): Promise<string>;
  /** Writes a workspace file, making its folders (same confinement as {@link readFile}). */
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  /** Writes several files: relative path → content. */
  writeFiles(files: Readonly<Record<string, string>>): Promise<void>;
  /** Kills running commands and removes the workspace. Safe to call twice. */
  dispose(): Promise<void>;
}

/** The limits of a sandbox that sets none. */
export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  wallMs: 30_000,
  cpuSeconds: 10,
  memoryBytes: 1024 * 1024 * 1024,
  processes: 64,
  fileBytes: 64 * 1024 * 1024,
  outputBytes: 1024 * 1024,
});

/** The caps of a sandbox that sets none. */
export const DEFAULT_CAPS: Readonly<SandboxCaps> = Object.freeze({
  memoryBytes: 1024 * 1024 * 1024,
  processes: 64,
});

/** Host paths mounted read-only by default. */
export const DEFAULT_SYSTEM_PATHS: readonly string[] = Object.freeze([
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
]);

/** The unprivileged user a root process runs sandboxes as, by default (far above the uids Debian and systemd hand out). */
export const DEFAULT_RUN_AS = Object.freeze({ uid: 2_000_000_000, gid: 2_000_000_000 });

/** The environment every command starts from. */
export const BASE_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: SANDBOX_WORKSPACE,
  TMPDIR: '/tmp',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  PYTHONDONTWRITEBYTECODE: '1',
});
