/**
 * Which sandbox this machine can make, and why not where it cannot: each way is tried for real
 * (a `true` run through the whole set-up, limits included), so a kernel without user
 * namespaces, an AppArmor rule against them or an unreachable temporary folder show up here,
 * with the sandbox's own message, rather than at the first rollout. So is the cgroup each
 * sandbox gets (v2, else v1): made, a process moved into it, removed; where none works, the
 * report says why and the per-process limits hold alone. `turnstream doctor` reads
 * {@link detectSandbox}; {@link createSandbox} uses the same probes.
 */
import { tmpdir } from 'node:os';
import { canUseApt, findExecutable, invalidInput } from '../../core/index.ts';
import { bwrapBackend } from './bwrap-sandbox.ts';
import { reapCgroups } from './cgroup-reaper.ts';
import { cgroupCandidates, hostCgroupFiles, type CgroupSite } from './cgroup-site.ts';
import { INSTALL_BUBBLEWRAP } from './install-bubblewrap.ts';
import type { SandboxBackend } from './launch.ts';
import { lifelineArgv } from './lifeline.ts';
import { prlimitArgv, resolveLimits } from './limits.ts';
import { probeCgroupSite } from './rollout-cgroup.ts';
import { runSandboxed } from './run-sandboxed.ts';
import {
  BASE_ENV,
  DEFAULT_RUN_AS,
  DEFAULT_SYSTEM_PATHS,
  SANDBOX_WORKSPACE,
  type CapsReport,
  type ExecResult,
  type SandboxKind,
  type SandboxOptions,
} from './sandbox.ts';
import { systemMounts, type SystemMount } from './system-paths.ts';
import { unshareBackend } from './unshare-sandbox.ts';
import { Workspace, type Owner } from './workspace.ts';

/** The options detection depends on. */
export type DetectOptions = Pick<SandboxOptions, 'tmpRoot' | 'runAs' | 'systemPaths' | 'bwrapPath' | 'python' | 'cgroup'>;

/** One way of making a sandbox, as found here. */
export interface BackendReport {
  kind: SandboxKind;
  /** A sandbox was made and ran `true`. */
  available: boolean;
  /** The program (bwrap or unshare) where found. */
  program?: string;
  /** Why not, where not available: a missing program, or the sandbox's own message. */
  reason?: string;
}

/** What this machine offers. */
export interface SandboxDetection {
  /** The sandbox `createSandbox` makes (`kind: 'auto'`): bubblewrap where it runs, else unshare; undefined where none can be made. */
  kind: SandboxKind | undefined;
  /** Each way, best first. */
  backends: BackendReport[];
  /** The host user sandboxes run as (this process is root); undefined when they run as the current user. */
  runAs?: Owner;
  /** bwrap was found. */
  bwrapFound: boolean;
  /** Running as root with apt-get: turnstream installs a missing bwrap itself. */
  canApt: boolean;
  /** What installs the missing bubblewrap, where it is missing. */
  fix?: string;
  /** How each sandbox's caps on memory and processes are kept: a cgroup (v2, v1) or per process only, and why. */
  caps: CapsReport;
}

/** What {@link detectSandbox} adds for a doctor: the code tool's interpreter. */
export interface SandboxReport extends SandboxDetection {
  /** `python3` inside the sandbox (the host's, read-only), with its version or why not. */
  python: { available: boolean; version?: string; reason?: string };
}

/** A way of making sandboxes that works here, ready to launch commands. */
export interface SandboxHost {
  backend: SandboxBackend;
  setpriv: string;
  prlimit: string;
  runAs?: Owner;
  system: readonly SystemMount[];
  tmpRoot: string;
  /** Where each sandbox's cgroup is made; undefined: per-process limits only. */
  cgroup?: CgroupSite;
  /** `sh` on the host: the gate a command waits at until it is in its cgroup. */
  sh?: string;
}

/** The user sandboxes run as: `runAs` (default {@link DEFAULT_RUN_AS}) for root, none otherwise. */
export function sandboxUser(runAs: Owner | undefined, uid = process.getuid?.()): Owner | undefined {
  if (uid !== 0) return undefined;
  const owner = runAs ?? DEFAULT_RUN_AS;
  for (const [k, v] of Object.entries(owner)) {
    if (!Number.isSafeInteger(v) || v <= 0 || v >= 2 ** 32 - 1)
      throw invalidInput(`runAs.${k} must be an unprivileged id (1 to 2^32-2), got ${v}`, 'runAs');
  }
  return { uid: owner.uid, gid: owner.gid };
}

/**
 * Tries each way of making a sandbox; the hosts that work and the report. Programs are found
 * on PATH and in the usual system folders.
 */
export async function probeSandboxes(
  options: DetectOptions = {},
): Promise<{ detection: SandboxDetection; hosts: Partial<Record<SandboxKind, SandboxHost>> }> {
  const runAs = sandboxUser(options.runAs);
  const system = systemMounts(options.systemPaths ?? DEFAULT_SYSTEM_PATHS);
  const tmpRoot = options.tmpRoot ?? tmpdir();
  const found = (name: string) => findExecutable(name);
  const setpriv = found('setpriv');
  const prlimit = found('prlimit');
  const bwrap = findExecutable(options.bwrapPath ?? 'bwrap');
  const unshare = found('unshare');
  const sh = found('sh');
  const env = found('env');
  const common = !setpriv ? 'setpriv not found (util-linux)' : !prlimit ? 'prlimit not found (util-linux)' : undefined;

  const candidates: { kind: SandboxKind; program?: string; missing?: string; backend?: () => SandboxBackend }[] = [
    {
      kind: 'bwrap',
      program: bwrap,
      missing: common ?? (bwrap ? undefined : `bwrap not found (${INSTALL_BUBBLEWRAP})`),
      backend: () => bwrapBackend(bwrap as string),
    },
    {
      kind: 'unshare',
      program: unshare,
      missing:
        common ?? (!unshare ? 'unshare not found (util-linux)' : !sh ? 'sh not found' : !env ? 'env not found (coreutils)' : undefined),
      backend: () => unshareBackend({ unshare: unshare as string, sh: sh as string, setpriv: setpriv as string, env: env as string }),
    },
  ];
  const backends: BackendReport[] = [];
  const hosts: Partial<Record<SandboxKind, SandboxHost>> = {};
  for (const c of candidates) {
    if (c.missing) {
      backends.push({ kind: c.kind, available: false, ...(c.program ? { program: c.program } : {}), reason: c.missing });
      continue;
    }
    const host: SandboxHost = {
      backend: (c.backend as () => SandboxBackend)(),
      setpriv: setpriv as string,
      prlimit: prlimit as string,
      runAs,
      system,
      tmpRoot,
    };
    const reason = await probe(host);
    backends.push({ kind: c.kind, available: !reason, program: c.program, ...(reason ? { reason } : {}) });
    if (!reason) hosts[c.kind] = host;
  }
  const { caps, site } = await findCgroupSite(options.cgroup ?? 'auto', sh);
  if (site) for (const h of Object.values(hosts)) Object.assign(h, { cgroup: site, sh });
  const kind = backends.find((b) => b.available)?.kind;
  const detection: SandboxDetection = {
    kind,
    backends,
    ...(runAs ? { runAs } : {}),
    bwrapFound: bwrap !== undefined,
    canApt: canUseApt(),
    ...(!bwrap ? { fix: INSTALL_BUBBLEWRAP } : {}),
    caps,
  };
  return { detection, hosts };
}

/** The sites whose leftovers this process has cleared (once each). */
const reaped = new Set<string>();

/**
 * Where rollout cgroups are made (cgroup v2, else v1), each tried for real, or why neither: the
 * report says which. Clears, once, what killed runs left at the site found.
 */
async function findCgroupSite(mode: 'auto' | 'off', sh: string | undefined): Promise<{ caps: CapsReport; site?: CgroupSite }> {
  if (mode === 'off') return { caps: { by: 'per-process', detail: 'cgroups turned off (SandboxOptions.cgroup)' } };
  if (!sh) return { caps: { by: 'per-process', detail: 'sh not found (a command waits in sh until it is in its cgroup)' } };
  let candidates;
  try {
    candidates = cgroupCandidates(hostCgroupFiles());
  } catch (err) {
    return { caps: { by: 'per-process', detail: `cannot read this process's cgroups (${(err as Error).message})` } };
  }
  const reasons: string[] = [];
  for (const c of [candidates.v2, ...(candidates.v2Parent ? [candidates.v2Parent] : []), candidates.v1]) {
    if (!c.site) {
      reasons.push(c.reason);
      continue;
    }
    const why = await probeCgroupSite(c.site, sh);
    if (why) {
      reasons.push(why);
      continue;
    }
    const key = JSON.stringify(c.site);
    if (!reaped.has(key)) {
      reaped.add(key);
      await reapCgroups(c.site);
    }
    const where = c.site.memory === c.site.pids ? c.site.memory : `${c.site.memory} and ${c.site.pids}`;
    const by = c.site.version === 2 ? 'cgroup-v2' : 'cgroup-v1';
    return {
      caps: { by, detail: `a cgroup per sandbox in ${where}`, folders: { memory: c.site.memory, pids: c.site.pids } },
      site: c.site,
    };
  }
  return { caps: { by: 'per-process', detail: reasons.join('; ') } };
}

/** Which sandbox this machine can make and why, with the code tool's python3; makes no sandbox to keep. */
export async function detectSandbox(options: DetectOptions = {}): Promise<SandboxReport> {
  const { detection, hosts } = await probeSandboxes(options);
  const host = detection.kind ? hosts[detection.kind] : undefined;
  if (!host) return { ...detection, python: { available: false, reason: 'no sandbox can be made' } };
  const python = options.python ?? 'python3';
  const r = await runIn(host, [python, '-I', '-c', 'import sys; print(sys.version.split()[0])']);
  return {
    ...detection,
    python:
      r.exitCode === 0
        ? { available: true, version: r.stdout.trim() }
        : {
            available: false,
            reason: `${python} does not run in the sandbox (${firstLine(r) || `exit ${r.exitCode ?? r.signal}`}); it must be installed under the system paths (e.g. /usr/bin/python3)`,
          },
  };
}

/** The reason a sandbox cannot run a command (its message), or undefined where it can. */
async function probe(host: SandboxHost): Promise<string | undefined> {
  try {
    const r = await runIn(host, ['true']);
    return r.exitCode === 0 ? undefined : firstLine(r) || `exit ${r.exitCode ?? r.signal}`;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Runs one command in a throw-away workspace. */
async function runIn(host: SandboxHost, argv: string[]): Promise<ExecResult> {
  const ws = await Workspace.create(host.tmpRoot, host.runAs);
  try {
    const limits = resolveLimits(undefined, { wallMs: 15_000 });
    return await runSandboxed(
      {
        argv: host.backend.argv({
          box: ws,
          system: host.system,
          env: BASE_ENV,
          cwd: SANDBOX_WORKSPACE,
          command: [...lifelineArgv(), ...prlimitArgv(host.prlimit, limits), ...argv],
        }),
        env: host.backend.hostEnv,
        setpriv: host.setpriv,
        runAs: host.runAs,
      },
      { limits },
    );
  } finally {
    await ws.dispose();
  }
}

const firstLine = (r: ExecResult): string =>
  r.stderr
    .split('\n')
    .map((l) => l.trim())
    .find(Boolean) ?? '';
