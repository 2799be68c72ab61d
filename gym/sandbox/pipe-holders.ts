/**
 * The last resort of a kill: the processes that hold a command's stdout or stderr. A
 * sandbox's init gets SIGKILL when the sandbox's outer process dies (bubblewrap's
 * `--die-with-parent`, unshare's `--kill-child`), but only once it has asked for that, a few
 * milliseconds into its start: a kill in those milliseconds leaves the init and its command
 * running (measured here: 13 of 40 bubblewrap sandboxes aborted 0–9 ms after the start). The
 * init keeps the pipes open, so it is found by them and killed, and the kernel then kills every
 * process left in its PID namespace.
 */
import { readdirSync, readlinkSync } from 'node:fs';

/** The pipes a process has as stdout and stderr (`pipe:[inode]`, or `socket:[inode]`: Node's child pipes are socket pairs); empty once it is gone. */
export function stdioPipes(pid: number): Set<string> {
  const pipes = new Set<string>();
  for (const fd of [1, 2]) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (link.startsWith('pipe:') || link.startsWith('socket:')) pipes.add(link);
    } catch {
      // gone already
    }
  }
  return pipes;
}

/** The processes, other than this one, holding one of `pipes`. */
export function pipeHolders(pipes: ReadonlySet<string>): number[] {
  if (pipes.size === 0) return [];
  const holders: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${name}/fd`);
    } catch {
      continue; // gone, or another user's (never a sandbox of ours)
    }
    const holds = fds.some((fd) => {
      try {
        return pipes.has(readlinkSync(`/proc/${name}/fd/${fd}`));
      } catch {
        return false;
      }
    });
    if (holds) holders.push(Number(name));
  }
  return holders;
}

/** SIGKILLs every process, other than this one, holding one of `pipes`; how many were killed. */
export function killPipeHolders(pipes: ReadonlySet<string>): number {
  let killed = 0;
  for (const pid of pipeHolders(pipes)) {
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}
