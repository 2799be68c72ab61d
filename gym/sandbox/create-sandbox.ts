/**
 * Making a sandbox: the way chosen once per process and options (bubblewrap where it runs,
 * else unshare), bubblewrap installed first where it is missing and this process may install it
 * (root with apt-get, as the stack installs ClickHouse), then a fresh workspace with the task's
 * files. Where no way works the error names each reason and the fix; nothing runs on the host.
 * Each new sandbox first clears what killed parents left under the same folder (reap-orphans.ts).
 */
import { ErrorCodes, TurnstreamError, createLogger } from '../../core/index.ts';
import { probeSandboxes, type DetectOptions, type SandboxDetection, type SandboxHost } from './detect-sandbox.ts';
import { INSTALL_BUBBLEWRAP, installBubblewrap, shouldInstallBubblewrap } from './install-bubblewrap.ts';
import { resolveLimits } from './limits.ts';
import { LinuxSandbox } from './linux-sandbox.ts';
import { reapOrphans } from './reap-orphans.ts';
import { BASE_ENV, type Sandbox, type SandboxKind, type SandboxOptions } from './sandbox.ts';
import { Workspace } from './workspace.ts';

type Probed = Awaited<ReturnType<typeof probeSandboxes>>;

/** One probe per set of options in this process (a rollout batch makes many sandboxes). */
const probes = new Map<string, Promise<Probed>>();

const probeOnce = (options: DetectOptions): Promise<Probed> => {
  const key = JSON.stringify([options.tmpRoot, options.runAs, options.systemPaths, options.bwrapPath]);
  let p = probes.get(key);
  if (!p) {
    p = probeSandboxes(options);
    probes.set(key, p);
    p.catch(() => probes.delete(key));
  }
  return p;
};

/** The one-line error where no sandbox can be made (pure). */
export function noSandboxMessage(detection: SandboxDetection, wanted: SandboxKind | 'auto'): string {
  const reasons = detection.backends
    .filter((b) => wanted === 'auto' || b.kind === wanted)
    .map((b) => `${b.kind}: ${b.reason ?? 'available'}`)
    .join('; ');
  return `no sandbox can be made here, so nothing is run (${reasons}); install bubblewrap: ${INSTALL_BUBBLEWRAP}`;
}

/** Chooses the way, installing bubblewrap where it is missing and may be installed. */
async function chooseHost(options: SandboxOptions): Promise<SandboxHost> {
  const wanted = options.kind ?? 'auto';
  let { detection, hosts } = await probeOnce(options);
  if (shouldInstallBubblewrap({ wanted, found: detection.bwrapFound, canApt: detection.canApt, enabled: options.install })) {
    (options.logger ?? createLogger('gym-sandbox')).info("bwrap not found: installing Debian's bubblewrap with apt-get (running as root)");
    await installBubblewrap();
    probes.clear();
    ({ detection, hosts } = await probeOnce(options));
  }
  const kind = wanted === 'auto' ? detection.kind : wanted;
  const host = kind ? hosts[kind] : undefined;
  if (!host) throw new TurnstreamError(ErrorCodes.PREREQUISITE, noSandboxMessage(detection, wanted));
  return host;
}

/**
 * A fresh sandbox with its workspace set up from `options.files`.
 * @throws TurnstreamError TS_ERR_PREREQUISITE where no sandbox can be made (each way's reason and
 * the fix), TS_ERR_INVALID_INPUT for bad options or file paths
 */
export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const limits = resolveLimits(undefined, options.limits);
  const host = await chooseHost(options);
  await reapOrphans(host.tmpRoot);
  const workspace = await Workspace.create(host.tmpRoot, host.runAs);
  try {
    const sandbox = new LinuxSandbox(host, workspace, limits, { ...BASE_ENV, ...options.env }, options.python ?? 'python3');
    await sandbox.writeFiles(options.files ?? {});
    return sandbox;
  } catch (err) {
    await workspace.dispose();
    throw err;
  }
}
