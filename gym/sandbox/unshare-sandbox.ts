/**
 * The sandbox made with util-linux alone, where bubblewrap cannot run: `unshare` makes new
 * user (the caller mapped to root inside), mount, PID, network, IPC, UTS and cgroup namespaces;
 * a set-up shell, PID 1 of the new PID namespace, builds a root on a tmpfs (the host's system
 * bind-mounted and remounted read-only with whatever is mounted below it, /proc, a /dev of
 * device nodes, the workspace and /tmp; /dev and the root read-only), brings the loopback up,
 * then runs the command under `chroot` and `setpriv` with an empty capability bounding set and
 * no_new_privs: uid 0 inside without any capability, so it can neither remount, nor leave the
 * chroot, nor read the set-up shell's root through /proc/1/root (ptrace rules).
 *
 * The same guarantees as bubblewrap's, with two differences: the command runs as root without
 * capabilities rather than as an ordinary user, and its parent is a shell, not bubblewrap's
 * init (the shell reaps orphans too). It needs unshare, setpriv, chroot and mount from the host
 * (util-linux, coreutils) and user namespaces a non-root user may make.
 */
import { SANDBOX_WORKSPACE } from './sandbox.ts';
import { HOST_PATH, type Launch, type SandboxBackend } from './launch.ts';
import type { SystemMount } from './system-paths.ts';

/** Host programs the unshare sandbox runs (absolute paths; setpriv and env are run inside, under the same paths). */
export interface UnshareTools {
  unshare: string;
  sh: string;
  setpriv: string;
  env: string;
}

const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/** The set-up shell script: `$1` the root folder, `$2` the workspace, `$3` /tmp, then the command (pure). */
export function unshareSetupScript(system: readonly SystemMount[]): string {
  const lines = ['set -eu', 'R=$1; W=$2; T=$3; shift 3', 'mount -t tmpfs -o mode=0755 turnstream-root "$R"'];
  const binds: string[] = [];
  for (const m of system) {
    if (m.kind === 'symlink') {
      lines.push(`mkdir -p "$R"${q(m.path.slice(0, m.path.lastIndexOf('/')) || '/')}`, `ln -s ${q(m.target)} "$R"${q(m.path)}`);
      continue;
    }
    binds.push(m.path);
    lines.push(
      `if [ -d ${q(m.path)} ]; then mkdir -p "$R"${q(m.path)}; else mkdir -p "$(dirname "$R"${q(m.path)})"; touch "$R"${q(m.path)}; fi`,
      `mount --rbind ${q(m.path)} "$R"${q(m.path)}`,
    );
  }
  lines.push(
    `mkdir -p "$R/proc" "$R/dev" "$R${SANDBOX_WORKSPACE}" "$R/tmp"`,
    'mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
    'mount -t tmpfs -o mode=0755,nosuid turnstream-dev "$R/dev"',
    'for n in null zero full random urandom tty; do touch "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"; done',
    'ln -s /proc/self/fd "$R/dev/fd"; ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"',
    `mount --bind "$W" "$R${SANDBOX_WORKSPACE}"`,
    'mount --bind "$T" "$R/tmp"',
  );
  if (binds.length) {
    // every system mount read-only, with whatever the host mounts below it (e.g. /etc/hosts in a container)
    const match = binds.map((p) => `p == r ${JSON.stringify(p)} || index(p, r ${JSON.stringify(`${p}/`)}) == 1`).join(' || ');
    lines.push(
      `awk -v r="$R" '{ p = $5; gsub(/\\\\040/, " ", p); if (${match.replaceAll("'", `'\\''`)}) print p }' /proc/self/mountinfo |`,
      '  while IFS= read -r m; do mount -o remount,bind,ro "$m"; done',
    );
  }
  lines.push(
    'mount -o remount,bind,ro "$R/dev"',
    'mount -o remount,bind,ro "$R"',
    'hostname sandbox 2>/dev/null || true',
    'ip link set lo up 2>/dev/null || true',
    // not exec: this shell stays PID 1 (outside the chroot, out of the command's reach) and reaps orphans
    'chroot "$R" "$@"',
  );
  return lines.join('\n');
}

/** unshare's program line for one command (pure). */
export function unshareArgv(tools: UnshareTools, launch: Launch): string[] {
  const env = Object.entries(launch.env).map(([k, v]) => `${k}=${v}`);
  return [
    tools.unshare,
    ...['--user', '--map-root-user', '--mount', '--pid', '--net', '--ipc', '--uts', '--cgroup', '--fork', '--kill-child'],
    '--',
    tools.sh,
    '-c',
    unshareSetupScript(launch.system),
    'turnstream-sandbox',
    launch.box.root,
    launch.box.dir,
    launch.box.tmp,
    ...[tools.setpriv, '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'],
    ...[tools.env, '-i', '-C', launch.cwd, ...env],
    ...launch.command,
  ];
}

export function unshareBackend(tools: UnshareTools): SandboxBackend {
  return { kind: 'unshare', argv: (launch) => unshareArgv(tools, launch), hostEnv: { PATH: HOST_PATH } };
}
