/**
 * Where this process may make its rollouts' cgroups, in the hierarchy that has the memory and
 * pids controllers, read from /proc/self/mountinfo and /proc/self/cgroup:
 * - cgroup v2 (one unified hierarchy: `memory.max`, `pids.max`): below this process's own
 *   cgroup where it gives its children those controllers; v2 gives them only to the children of
 *   a cgroup without processes of its own (the hierarchy's root aside), so where this process's
 *   cgroup cannot, beside it, below its parent, where the parent already gives them (a systemd
 *   slice does) and this process may write there (root);
 * - else cgroup v1 (a hierarchy per controller: `memory.limit_in_bytes`, `pids.max`), below this
 *   process's own cgroups.
 * A hybrid host (v1 controllers with an empty v2 hierarchy beside them, as this project's
 * machines) gets v1. Whether a cgroup can really be made at a site, and a process moved into it,
 * is tried by the probe (rollout-cgroup.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where rollout cgroups are made. */
export interface CgroupSite {
  version: 1 | 2;
  /** v2: the folder is this process's own cgroup (`own`), or its parent's (`parent`): the probe may enable the controllers in its own only. */
  below?: 'own' | 'parent';
  /** The folder rollout cgroups get their memory cgroup in (this process's own cgroup). */
  memory: string;
  /** The folder of their pids cgroup (the same folder as `memory` on v2). */
  pids: string;
  /** The mount points searched for what killed processes left (cgroup-reaper.ts). */
  mounts: string[];
}

/** One place a site may be, or why not. */
export type SiteCandidate = { site: CgroupSite; reason?: undefined } | { site?: undefined; reason: string };

/** A cgroup mount (pure parse of one /proc/self/mountinfo line). */
interface CgroupMount {
  version: 1 | 2;
  /** The folder it is mounted at. */
  at: string;
  /** The path in the hierarchy that is mounted there (`/` unless a container mounts its own part). */
  root: string;
  /** v1: the controllers this hierarchy has. */
  controllers: string[];
}

/** mountinfo escapes a space, tab, newline and backslash in octal. */
const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The cgroup mounts in /proc/self/mountinfo's text (pure). */
export function cgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right) continue;
    const f = left.split(' ');
    const [fstype, , superOptions = ''] = right.split(' ');
    if (fstype === 'cgroup2') mounts.push({ version: 2, at: unescape(f[4]), root: unescape(f[3]), controllers: [] });
    else if (fstype === 'cgroup')
      mounts.push({ version: 1, at: unescape(f[4]), root: unescape(f[3]), controllers: superOptions.split(',') });
  }
  return mounts;
}

/** This process's cgroup per v1 controller, and its v2 cgroup under `''` (pure parse of /proc/self/cgroup). */
export function ownCgroups(procCgroup: string): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of procCgroup.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '') own.set('', m[2]);
    else for (const c of m[1].split(',')) own.set(c, m[2]);
  }
  return own;
}

/** The folder of cgroup `path` under a mount, where the mount shows it. */
function folderOf(mount: CgroupMount, path: string): string | undefined {
  const at = (rest: string) => join(mount.at, rest).replace(/(.)\/+$/, '$1');
  if (mount.root === '/') return at(path);
  if (path === mount.root) return mount.at;
  return path.startsWith(`${mount.root}/`) ? at(path.slice(mount.root.length)) : undefined;
}

/** What the host reads: the files behind {@link cgroupCandidates}. */
export interface CgroupHostFiles {
  mountinfo: string;
  procCgroup: string;
  /** A cgroup v2 folder's `cgroup.controllers` (undefined where unreadable). */
  controllers(dir: string): string | undefined;
}

/** This process's files. */
export const hostCgroupFiles = (): CgroupHostFiles => ({
  mountinfo: readFileSync('/proc/self/mountinfo', 'utf8'),
  procCgroup: readFileSync('/proc/self/cgroup', 'utf8'),
  controllers: (dir) => {
    try {
      return readFileSync(join(dir, 'cgroup.controllers'), 'utf8');
    } catch {
      return undefined;
    }
  },
});

/**
 * The sites to try, best first: cgroup v2 below this process's cgroup, then below its parent's
 * (none where this process's cgroup is the hierarchy's root), then v1; each with why not where
 * it cannot be (pure but for `files.controllers`).
 */
export function cgroupCandidates(files: CgroupHostFiles): { v2: SiteCandidate; v2Parent?: SiteCandidate; v1: SiteCandidate } {
  const mounts = cgroupMounts(files.mountinfo);
  const own = ownCgroups(files.procCgroup);
  return { ...v2Candidates(mounts, own, files), v1: v1Candidate(mounts, own) };
}

function v2Candidates(
  mounts: CgroupMount[],
  own: Map<string, string>,
  files: CgroupHostFiles,
): { v2: SiteCandidate; v2Parent?: SiteCandidate } {
  const mount = mounts.find((m) => m.version === 2);
  if (!mount) return { v2: { reason: 'no cgroup v2 hierarchy is mounted' } };
  const path = own.get('');
  const dir = path === undefined ? undefined : folderOf(mount, path);
  if (!dir) return { v2: { reason: `this process's cgroup v2 is not under ${mount.at}` } };
  const have = (files.controllers(dir) ?? '').split(/\s+/).filter(Boolean);
  const missing = ['memory', 'pids'].filter((c) => !have.includes(c));
  if (missing.length) {
    const v1 = mounts.filter((m) => m.version === 1 && missing.some((c) => m.controllers.includes(c)));
    return {
      v2: { reason: `cgroup v2 at ${mount.at} has no ${missing.join(' or ')} controller${v1.length ? ' (cgroup v1 has it)' : ''}` },
    };
  }
  const site = (folder: string, below: 'own' | 'parent'): CgroupSite => ({
    version: 2,
    below,
    memory: folder,
    pids: folder,
    mounts: [mount.at],
  });
  if (dir === mount.at) return { v2: { site: site(dir, 'own') } };
  return { v2: { site: site(dir, 'own') }, v2Parent: { site: site(dirname(dir), 'parent') } };
}

function v1Candidate(mounts: CgroupMount[], own: Map<string, string>): SiteCandidate {
  const folders: Partial<Record<'memory' | 'pids', string>> = {};
  const at: string[] = [];
  for (const c of ['memory', 'pids'] as const) {
    const mount = mounts.find((m) => m.version === 1 && m.controllers.includes(c));
    if (!mount) return { reason: `no cgroup v1 ${c} hierarchy is mounted` };
    const path = own.get(c);
    const dir = path === undefined ? undefined : folderOf(mount, path);
    if (!dir) return { reason: `this process's v1 ${c} cgroup is not under ${mount.at}` };
    folders[c] = dir;
    at.push(mount.at);
  }
  return { site: { version: 1, memory: folders.memory as string, pids: folders.pids as string, mounts: [...new Set(at)] } };
}
