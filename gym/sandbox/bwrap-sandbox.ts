/**
 * The sandbox made by bubblewrap (`bwrap`, Debian's `bubblewrap`): new user, mount, PID,
 * network, IPC, UTS and cgroup namespaces; the host's system read-only; the workspace at
 * /workspace and the sandbox's own /tmp the only writable mounts (the root, /dev and /proc are
 * bubblewrap's own, and the root and /dev are remounted read-only); no capabilities; a new
 * session (no terminal to push keystrokes into); the loopback interface of an empty network
 * namespace, so 127.0.0.1 is the sandbox's own and nothing of the host's is reachable.
 */
import { SANDBOX_WORKSPACE } from './sandbox.ts';
import { HOST_PATH, type Launch, type SandboxBackend } from './launch.ts';

/** bubblewrap's arguments for one command (pure). */
export function bwrapArgs(launch: Launch): string[] {
  const args = ['--unshare-all', '--unshare-user', '--die-with-parent', '--new-session', '--hostname', 'sandbox'];
  for (const m of launch.system) args.push(...(m.kind === 'bind' ? ['--ro-bind', m.path, m.path] : ['--symlink', m.target, m.path]));
  args.push('--proc', '/proc', '--dev', '/dev', '--remount-ro', '/dev');
  args.push('--bind', launch.box.dir, SANDBOX_WORKSPACE, '--bind', launch.box.tmp, '/tmp', '--remount-ro', '/');
  args.push('--chdir', launch.cwd, '--clearenv');
  for (const [k, v] of Object.entries(launch.env)) args.push('--setenv', k, v);
  args.push('--', ...launch.command);
  return args;
}

export function bwrapBackend(bwrap: string): SandboxBackend {
  return { kind: 'bwrap', argv: (launch) => [bwrap, ...bwrapArgs(launch)], hostEnv: { PATH: HOST_PATH } };
}
