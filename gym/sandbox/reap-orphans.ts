/**
 * What a killed parent leaves behind, cleared by the next one. A sandbox's folder is named
 * after the process that made it (`turnstream-sandbox-<pid>-…`). When that process is gone:
 * - any process still naming the folder in its command line is killed. The lifeline
 *   (lifeline.ts) stops every command, but a bubblewrap whose parent died in its first
 *   milliseconds stays blocked in its set-up for ever (it waits for the parent to map its user
 *   namespace): it runs nothing, yet it is a process left behind;
 * - the folder is removed (a killed process cannot remove its own).
 * Folders and processes of live parents are never touched.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { removeTree } from './remove-tree.ts';

/** The start of every sandbox folder's name. */
export const BOX_PREFIX = 'turnstream-sandbox-';

/** The start of the name of a sandbox folder this process makes (`mkdtemp` adds the rest). */
export const boxPrefix = (pid = process.pid): string => `${BOX_PREFIX}${pid}-`;

/** A process exists (EPERM: it does, as another user's). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The parent pid in a sandbox folder's name, where `name` is one. */
export function boxOwner(name: string): number | undefined {
  const m = /^turnstream-sandbox-(\d+)-[^/]*$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Kills the processes of sandboxes under `tmpRoot` whose parent is gone, then removes those sandboxes' folders. */
export async function reapOrphans(tmpRoot: string): Promise<{ killed: number; removed: number }> {
  const root = tmpRoot.endsWith('/') ? tmpRoot : `${tmpRoot}/`;
  let killed = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const orphan = args.some((a) => {
      if (!a.startsWith(root)) return false;
      const owner = boxOwner(a.slice(root.length).split('/')[0]);
      return owner !== undefined && !isAlive(owner);
    });
    if (!orphan) continue;
    try {
      process.kill(Number(name), 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile, or not ours to kill
    }
  }
  let removed = 0;
  for (const name of await readdir(tmpRoot).catch(() => [] as string[])) {
    const owner = boxOwner(name);
    if (owner === undefined || isAlive(owner)) continue;
    try {
      await removeTree(join(tmpRoot, name));
      removed++;
    } catch {
      // another user's, or still in use by a process that is dying: the next reap tries again
    }
  }
  return { killed, removed };
}
