/**
 * A rollout's cgroup: every process of every command of one sandbox in one cgroup, so the caps on
 * memory and processes hold for the rollout as a whole, not per process (64 processes of 1 GiB
 * each fit the per-process limits, and would share the host's RAM with Kafka). Made when the
 * sandbox is made, before its first process; each command's outer process is moved into it
 * while it waits at a gate, before it execs the sandbox (run-sandboxed.ts), so everything the
 * sandbox starts is in it from the first instruction. Removed when the sandbox is disposed, once
 * its processes are dead; a killed parent's are removed by its janitor or the next run
 * (cgroup-reaper.ts).
 *
 * - v2: `memory.max` (and `memory.swap.max` 0: no swap to spill into), `pids.max`.
 * - v1: `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes` (memory and swap together,
 *   where the kernel accounts swap), `pids.max`, in two hierarchies.
 * Past the memory cap the kernel reclaims, then its OOM killer stops a process of the rollout,
 * never one of the host's.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CgroupSite } from './cgroup-site.ts';
import { CGROUP_PREFIX, removeCgroup, watchCgroups } from './cgroup-reaper.ts';
import type { SandboxCaps, SandboxUsage } from './sandbox.ts';

let made = 0;

/** A cgroup file's first number (`max` reads as Infinity); undefined where the file is missing. */
function readNumber(path: string): number | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return text === 'max' ? Infinity : Number(text.split(/\s+/)[0]);
  } catch {
    return undefined;
  }
}

/** One `key value` line of a flat-keyed cgroup file (memory.events, memory.oom_control). */
function readKey(path: string, key: string): number | undefined {
  try {
    const line = readFileSync(path, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return line ? Number(line.slice(key.length + 1)) : undefined;
  } catch {
    return undefined;
  }
}

const write = (dir: string, file: string, value: string): void => writeFileSync(join(dir, file), value);

export class RolloutCgroup {
  private removed = false;

  private constructor(
    readonly site: CgroupSite,
    /** Its folders: the memory cgroup, then the pids cgroup (the same one on v2). */
    readonly dirs: readonly string[],
    readonly caps: Readonly<SandboxCaps>,
  ) {}

  /** The memory cgroup's folder. */
  get memoryDir(): string {
    return this.dirs[0];
  }
  /** The pids cgroup's folder. */
  get pidsDir(): string {
    return this.dirs[this.dirs.length - 1];
  }

  /**
   * A new cgroup with the caps, named after this process (`turnstream-rollout-<pid>-<n>`).
   * @throws the file system's error (EACCES, EBUSY, …) where it cannot be made; nothing is left then
   */
  static create(site: CgroupSite, caps: Readonly<SandboxCaps>): RolloutCgroup {
    const name = `${CGROUP_PREFIX}${process.pid}-${++made}`;
    const dirs = site.version === 2 ? [join(site.memory, name)] : [join(site.memory, name), join(site.pids, name)];
    watchCgroups(site);
    const cg = new RolloutCgroup(site, dirs, caps);
    try {
      for (const d of dirs) mkdirSync(d);
      const mem = cg.memoryDir;
      if (site.version === 2) {
        write(mem, 'memory.max', String(caps.memoryBytes));
        if (existsSync(join(mem, 'memory.swap.max'))) write(mem, 'memory.swap.max', '0');
      } else {
        write(mem, 'memory.limit_in_bytes', String(caps.memoryBytes));
        // memory and swap together, so swap is no way past the cap (the file exists where the kernel accounts swap)
        if (existsSync(join(mem, 'memory.memsw.limit_in_bytes'))) write(mem, 'memory.memsw.limit_in_bytes', String(caps.memoryBytes));
      }
      write(cg.pidsDir, 'pids.max', String(caps.processes));
    } catch (err) {
      cg.removeNow();
      throw err;
    }
    return cg;
  }

  /** Moves a process (a command's outer process, waiting at its gate) into the cgroup. */
  join(pid: number): void {
    for (const d of this.dirs) write(d, 'cgroup.procs', String(pid));
  }

  /** What the rollout's processes use and used; undefined once removed. */
  usage(): SandboxUsage | undefined {
    if (this.removed) return undefined;
    const mem = this.memoryDir;
    const v2 = this.site.version === 2;
    return {
      memoryBytes: readNumber(join(mem, v2 ? 'memory.current' : 'memory.usage_in_bytes')) ?? 0,
      memoryPeakBytes: readNumber(join(mem, v2 ? 'memory.peak' : 'memory.max_usage_in_bytes')),
      oomKills: readKey(join(mem, v2 ? 'memory.events' : 'memory.oom_control'), 'oom_kill') ?? 0,
      processes: readNumber(join(this.pidsDir, 'pids.current')) ?? 0,
      processesPeak: readNumber(join(this.pidsDir, 'pids.peak')),
    };
  }

  /** The pids in the cgroup now. */
  pids(): number[] {
    const pids = new Set<number>();
    for (const d of this.dirs) {
      try {
        for (const p of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n')) if (p) pids.add(Number(p));
      } catch {
        // gone
      }
    }
    return [...pids];
  }

  /**
   * Removes the cgroup once its processes are dead: any still in it (a command's last processes
   * on their way out) are killed first. Resolves false where it could not be removed within
   * `timeoutMs` (it is then left to the janitor and the next run); safe to call twice.
   */
  async remove(timeoutMs = 5000): Promise<boolean> {
    if (this.removed) return true;
    for (const d of this.dirs) if (!(await removeCgroup(d, timeoutMs))) return false;
    this.removed = true;
    return true;
  }

  /** One try at removing every folder (nothing can be in them yet). */
  private removeNow(): void {
    for (const d of this.dirs) {
      try {
        rmdirSync(d);
      } catch {
        // not made
      }
    }
    this.removed = true;
  }
}

/**
 * Whether rollout cgroups work at `site`: one is made with small caps, a process moved into it
 * (as commands are, at their gate) reads its own cgroup there, and the cgroup is removed.
 * On v2 the memory and pids controllers are first enabled for the children of this process's
 * cgroup where they are not (a parent's are never changed). Resolves with the reason where they
 * do not work.
 */
export async function probeCgroupSite(site: CgroupSite, sh: string): Promise<string | undefined> {
  if (site.version === 2) {
    const control = join(site.memory, 'cgroup.subtree_control');
    try {
      const enabled = readFileSync(control, 'utf8').split(/\s+/);
      const want = ['memory', 'pids'].filter((c) => !enabled.includes(c));
      if (want.length && site.below === 'parent')
        return `cgroup v2: ${site.memory} (this process's parent cgroup) does not give ${want.join(' and ')} to its children`;
      if (want.length) write(site.memory, 'cgroup.subtree_control', want.map((c) => `+${c}`).join(' '));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code === 'EBUSY'
        ? `cgroup v2: ${site.memory} holds processes, and cgroup v2 gives the memory and pids controllers only to the children of a cgroup without processes`
        : `cgroup v2: cannot enable the memory and pids controllers in ${control} (${code ?? (err as Error).message})`;
    }
  }
  let cg: RolloutCgroup;
  try {
    cg = RolloutCgroup.create(site, { memoryBytes: 64 * 1024 * 1024, processes: 8 });
  } catch (err) {
    return `cgroup v${site.version}: cannot make a cgroup in ${site.memory}${site.version === 1 ? ` and ${site.pids}` : ''} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  try {
    const child = spawn(sh, ['-c', 'read _ && cat /proc/self/cgroup'], { stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => void (out += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve).once('error', () => resolve(-1)));
    try {
      if (child.pid === undefined) throw new Error(`${sh} did not start`);
      cg.join(child.pid);
    } catch (err) {
      child.kill('SIGKILL');
      await closed;
      return `cgroup v${site.version}: cannot move a process into a cgroup (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
    }
    child.stdin.on('error', () => undefined); // a shell that died at once is reported below
    child.stdin.end('\n');
    await closed;
    const name = cg.memoryDir.split('/').at(-1) as string;
    const lines = out.split('\n').filter((l) => l.endsWith(`/${name}`));
    if (lines.length < (site.version === 2 ? 1 : 2))
      return `cgroup v${site.version}: a process moved into a cgroup is not in it (${out.trim()})`;
    return undefined;
  } finally {
    await cg.remove();
  }
}
