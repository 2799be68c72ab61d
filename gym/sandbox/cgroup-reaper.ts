/**
 * Rollout cgroups a killed parent left behind. A parent removes each rollout's cgroup when the
 * rollout ends; one killed (kill -9, Ctrl-C, a crash) cannot, so two things do it instead:
 * - its janitor: a shell started with the first cgroup, in a session of its own and deaf to
 *   the terminal's signals, blocked reading a pipe whose other end only the parent holds. When
 *   the parent dies, by any means, the read returns; the janitor kills what is left in the
 *   parent's cgroups (the lifeline has stopped every command by then) and removes them;
 * - the next run: {@link reapCgroups} removes the cgroups whose parent is gone, wherever they
 *   are in the hierarchies (another run's cgroup may sit below another process's cgroup), for
 *   a janitor that was killed too.
 * Cgroups are named after their parent (`turnstream-rollout-<pid>-<n>`); a live parent's are
 * never touched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { findExecutable } from '../../core/index.ts';
import type { CgroupSite } from './cgroup-site.ts';
import { isAlive } from './reap-orphans.ts';

/** The start of every rollout cgroup's name. */
export const CGROUP_PREFIX = 'turnstream-rollout-';

/** The parent pid in a rollout cgroup's name, where `name` is one. */
export function cgroupOwner(name: string): number | undefined {
  const m = /^turnstream-rollout-(\d+)-\d+$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** The janitor's script: `$1` the parent's pid, then the folders its cgroups are made in. */
export const JANITOR_SCRIPT = `trap '' HUP INT TERM QUIT
read _
p=$1; shift
for d in "$@"; do
  for c in "$d"/${CGROUP_PREFIX}"$p"-*; do
    [ -d "$c" ] || continue
    i=0
    until rmdir "$c" 2>/dev/null; do
      i=$((i + 1)); [ "$i" -gt 200 ] && break
      [ -e "$c/cgroup.kill" ] && echo 1 > "$c/cgroup.kill" 2>/dev/null
      for t in $(cat "$c/cgroup.procs" 2>/dev/null); do kill -9 "$t" 2>/dev/null; done
      sleep 0.05
    done
  done
done`;

/**
 * The janitor of each site this process makes cgroups at, held here for as long as this
 * process lives: its pipe must close only when this process dies.
 */
const janitors = new Map<string, ChildProcess | undefined>();

/** Starts the janitor of `site` for this process, once. */
export function watchCgroups(site: CgroupSite): void {
  const folders = [...new Set([site.memory, site.pids])];
  const key = folders.join('\0');
  if (janitors.has(key)) return;
  const sh = findExecutable('sh');
  if (!sh) {
    janitors.set(key, undefined); // left to the next run's reapCgroups
    return;
  }
  const child = spawn(sh, ['-c', JANITOR_SCRIPT, 'turnstream-cgroup-janitor', String(process.pid), ...folders], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  child.on('error', () => undefined); // a janitor that cannot start leaves the work to the next run
  // neither the janitor nor its pipe keeps this process running
  child.unref();
  (child.stdin as unknown as Socket | null)?.unref();
  child.stdin?.on('error', () => undefined);
  janitors.set(key, child);
}

/** The pid of this process's janitor for `site`, where one runs. */
export const janitorOf = (site: Pick<CgroupSite, 'memory' | 'pids'>): number | undefined =>
  janitors.get([...new Set([site.memory, site.pids])].join('\0'))?.pid;

/** Folders below `dir` (cgroups), depth first, at most `depth` levels down. */
function* cgroupsBelow(dir: string, depth: number): Generator<string> {
  if (depth === 0) return;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const path = join(dir, e.name);
    yield path;
    yield* cgroupsBelow(path, depth - 1);
  }
}

/**
 * Kills what is in a cgroup and removes it, trying again while its processes exit (a killed
 * process leaves its cgroup as it exits, not at the kill). Resolves false where it is still
 * there after `timeoutMs`; true once it is gone (or was never there).
 */
export async function removeCgroup(dir: string, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      rmdirSync(dir);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    }
    if (Date.now() > deadline) return false;
    if (existsSync(join(dir, 'cgroup.kill'))) {
      try {
        writeFileSync(join(dir, 'cgroup.kill'), '1');
      } catch {
        // gone meanwhile
      }
    } else {
      let pids: string[] = [];
      try {
        pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
      } catch {
        // gone meanwhile
      }
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL'); // a process of this cgroup: a rollout's own
        } catch {
          // gone meanwhile
        }
      }
    }
    await pause(20); // checked again shortly: the kernel empties the cgroup as the killed processes exit
  }
}

/**
 * Removes the rollout cgroups under `site`'s hierarchies whose parent is gone, killing what is
 * still in them; how many were removed. A cgroup that does not go within a few seconds is left
 * for the next run.
 */
export async function reapCgroups(site: CgroupSite, depth = 8): Promise<number> {
  let removed = 0;
  for (const mount of site.mounts) {
    const dead: string[] = [];
    for (const path of cgroupsBelow(mount, depth)) {
      const owner = cgroupOwner(path.slice(path.lastIndexOf('/') + 1));
      if (owner !== undefined && !isAlive(owner)) dead.push(path);
    }
    // deepest first: a folder goes only once nothing is below it
    for (const path of dead.reverse()) if (await removeCgroup(path, 2000)) removed++;
  }
  return removed;
}
