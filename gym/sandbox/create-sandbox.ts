/**
 * Making a sandbox: the way chosen once per process and options (bubblewrap where it runs,
 * else unshare), bubblewrap installed first where it is missing and this process may install it
 * (root with apt-get, as the stack installs ClickHouse), then a cgroup of the sandbox's own
 * where the host allows one, then a fresh workspace with the task's files. Where no way works
 * the error names each reason and the fix; nothing runs on the host.
 * Each new sandbox first clears what killed parents left under the same folder (reap-orphans.ts).
 *
 * {@link prepareSandbox} does the first part once, before a run's rollouts start: sandboxes
 * made at once (a batch of rollouts) share that one preparation, so bubblewrap is installed
 * once, not once per rollout.
 */
import { ErrorCodes, TurnstreamError, createLogger } from '../../core/index.ts';
import type { CgroupSite } from './cgroup-site.ts';
import { probeSandboxes, type DetectOptions, type SandboxDetection, type SandboxHost } from './detect-sandbox.ts';
import { ensureBubblewrap, INSTALL_BUBBLEWRAP, shouldInstallBubblewrap } from './install-bubblewrap.ts';
import { resolveCaps, resolveLimits } from './limits.ts';
import { LinuxSandbox } from './linux-sandbox.ts';
import { reapOrphans } from './reap-orphans.ts';
import { RolloutCgroup } from './rollout-cgroup.ts';
import { BASE_ENV, type Sandbox, type SandboxCaps, type SandboxCapsInForce, type SandboxKind, type SandboxOptions } from './sandbox.ts';
import { Workspace } from './workspace.ts';

type Probed = Awaited<ReturnType<typeof probeSandboxes>>;

/** The options a preparation depends on. */
type PrepareOptions = DetectOptions & Pick<SandboxOptions, 'kind' | 'install' | 'installCommand' | 'installLock' | 'logger'>;

/** One preparation per set of options in this process (a rollout batch makes many sandboxes). */
const preparations = new Map<string, Promise<Probed>>();

/** The one-line error where no sandbox can be made (pure). */
export function noSandboxMessage(detection: SandboxDetection, wanted: SandboxKind | 'auto'): string {
  const reasons = detection.backends
    .filter((b) => wanted === 'auto' || b.kind === wanted)
    .map((b) => `${b.kind}: ${b.reason ?? 'available'}`)
    .join('; ');
  return `no sandbox can be made here, so nothing is run (${reasons}); install bubblewrap: ${INSTALL_BUBBLEWRAP}`;
}

/** The probe, bubblewrap installed where it is missing and may be installed, and the probe again after an install. */
async function prepare(options: PrepareOptions): Promise<Probed> {
  const wanted = options.kind ?? 'auto';
  const probed = await probeSandboxes(options);
  const { detection } = probed;
  const canInstall = detection.canApt || options.installCommand !== undefined;
  if (!shouldInstallBubblewrap({ wanted, found: detection.bwrapFound, canApt: canInstall, enabled: options.install })) return probed;
  await ensureBubblewrap({
    bwrapPath: options.bwrapPath ?? 'bwrap',
    command: options.installCommand,
    lock: options.installLock,
    logger: options.logger ?? createLogger('gym-sandbox'),
  });
  return probeSandboxes(options);
}

const prepareOnce = (options: PrepareOptions): Promise<Probed> => {
  const key = JSON.stringify([
    options.tmpRoot,
    options.runAs,
    options.systemPaths,
    options.bwrapPath,
    options.cgroup,
    options.kind,
    options.install,
    options.installCommand,
    options.installLock,
  ]);
  let p = preparations.get(key);
  if (!p) {
    p = prepare(options);
    preparations.set(key, p);
    p.catch(() => preparations.delete(key));
  }
  return p;
};

/** The way to make sandboxes with `options`, prepared once. */
async function chooseHost(options: SandboxOptions): Promise<{ host: SandboxHost; detection: SandboxDetection }> {
  const wanted = options.kind ?? 'auto';
  const { detection, hosts } = await prepareOnce(options);
  const kind = wanted === 'auto' ? detection.kind : wanted;
  const host = kind ? hosts[kind] : undefined;
  if (!host) throw new TurnstreamError(ErrorCodes.PREREQUISITE, noSandboxMessage(detection, wanted));
  return { host, detection };
}

/** The sandbox's cgroup. @throws TurnstreamError TS_ERR_PREREQUISITE where the probed site refuses it now */
function makeCgroup(site: CgroupSite, caps: SandboxCaps): RolloutCgroup {
  try {
    return RolloutCgroup.create(site, caps);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new TurnstreamError(ErrorCodes.PREREQUISITE, `cannot make the sandbox's cgroup in ${site.memory} (${why})`, { cause: err });
  }
}

/**
 * Readies sandboxes before a run's rollouts start: finds the way (installing bubblewrap once
 * where it is missing) and the cgroups, and clears what killed runs left. Sandboxes made with
 * the same options afterwards reuse it. Resolves with what was found.
 * @throws TurnstreamError TS_ERR_PREREQUISITE in one line where no sandbox can be made (each
 * way's reason and the fix) or bubblewrap could not be installed
 */
export async function prepareSandbox(options: Omit<SandboxOptions, 'files'> = {}): Promise<SandboxDetection> {
  return (await chooseHost(options)).detection;
}

/** One line on how rollouts are sandboxed (pure): the way, and how the caps are kept. */
export function sandboxLine(d: SandboxDetection): string {
  const caps =
    d.caps.by === 'per-process' ? `limits per process only (${d.caps.detail})` : `caps per rollout by ${d.caps.by.replace('-', ' ')}`;
  return `gym: sandbox ${d.kind ?? 'none'}, ${caps}`;
}

/**
 * A fresh sandbox with its workspace set up from `options.files`, and its cgroup where the host
 * allows one.
 * @throws TurnstreamError TS_ERR_PREREQUISITE where no sandbox can be made (each way's reason and
 * the fix), TS_ERR_INVALID_INPUT for bad options or file paths
 */
export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const limits = resolveLimits(undefined, options.limits);
  const caps = resolveCaps(options.caps);
  const { host, detection } = await chooseHost(options);
  await reapOrphans(host.tmpRoot);
  const cgroup = host.cgroup ? makeCgroup(host.cgroup, caps) : undefined;
  const inForce: SandboxCapsInForce = cgroup ? { ...detection.caps, ...caps } : detection.caps;
  let workspace: Workspace | undefined;
  try {
    workspace = await Workspace.create(host.tmpRoot, host.runAs);
    const sandbox = new LinuxSandbox(
      host,
      workspace,
      limits,
      { ...BASE_ENV, ...options.env },
      options.python ?? 'python3',
      inForce,
      cgroup,
    );
    await sandbox.writeFiles(options.files ?? {});
    return sandbox;
  } catch (err) {
    await cgroup?.remove();
    await workspace?.dispose();
    throw err;
  }
}
