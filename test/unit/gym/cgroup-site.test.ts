/** Where rollout cgroups are made, read from a host's mounts and this process's cgroups: v2, else v1, else why neither. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cgroupOwner } from '../../../gym/sandbox/cgroup-reaper.ts';
import { cgroupCandidates, cgroupMounts, ownCgroups, type CgroupHostFiles } from '../../../gym/sandbox/cgroup-site.ts';

/** This project's machines: v1 controllers, an empty v2 hierarchy beside them, the process in a memory cgroup of its job. */
const HYBRID_MOUNTS = [
  '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd',
  '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
const HYBRID_SELF = ['9:name=systemd:/', '8:pids:/', '4:memory:/process_api/fdf06b', '1:cpu:/', '0::/'].join('\n');

/** A systemd host on cgroup v2 only, the process in a delegated service cgroup. */
const V2_MOUNTS =
  '30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot';
const V2_SELF = '0::/system.slice/turnstream.service\n';

const files = (mountinfo: string, procCgroup: string, controllers: Record<string, string> = {}): CgroupHostFiles => ({
  mountinfo,
  procCgroup,
  controllers: (dir) => controllers[dir],
});

describe('where rollout cgroups are made', () => {
  it('reads the cgroup mounts (escaped paths, a container’s own part of a hierarchy) and this process’s cgroups', () => {
    const mounts = cgroupMounts(
      `${HYBRID_MOUNTS}\n50 31 0:40 /docker/abc /mnt/my\\040cgroups rw - cgroup cgroup rw,memory,memsw\n60 1 0:1 / /proc rw - proc proc rw`,
    );
    assert.deepEqual(
      mounts.map((m) => [m.version, m.at, m.root]),
      [
        [1, '/sys/fs/cgroup/cpu', '/'],
        [1, '/sys/fs/cgroup/memory', '/'],
        [1, '/sys/fs/cgroup/pids', '/'],
        [1, '/sys/fs/cgroup/systemd', '/'],
        [2, '/sys/fs/cgroup/unified', '/'],
        [1, '/mnt/my cgroups', '/docker/abc'],
      ],
    );
    assert.deepEqual(mounts[5].controllers, ['rw', 'memory', 'memsw']);
    assert.deepEqual(
      [...ownCgroups('12:cpu,cpuacct:/a\n4:memory:/process_api/x\n0::/\n')],
      [
        ['cpu', '/a'],
        ['cpuacct', '/a'],
        ['memory', '/process_api/x'],
        ['', '/'],
      ],
    );
  });

  it('a hybrid host (v1 memory and pids, an empty v2 beside them) gets v1, below this process’s own cgroups; v2 says why not', () => {
    const { v2, v1 } = cgroupCandidates(files(HYBRID_MOUNTS, HYBRID_SELF, { '/sys/fs/cgroup/unified': 'hugetlb\n' }));
    assert.equal(v2.site, undefined);
    assert.equal(v2.reason, 'cgroup v2 at /sys/fs/cgroup/unified has no memory or pids controller (cgroup v1 has it)');
    assert.deepEqual(v1.site, {
      version: 1,
      memory: '/sys/fs/cgroup/memory/process_api/fdf06b',
      pids: '/sys/fs/cgroup/pids',
      mounts: ['/sys/fs/cgroup/memory', '/sys/fs/cgroup/pids'],
    });
  });

  it('a v2 host with the memory and pids controllers: v2 below this process’s cgroup, else below its parent’s', () => {
    const dir = '/sys/fs/cgroup/system.slice/turnstream.service';
    const { v2, v2Parent, v1 } = cgroupCandidates(files(V2_MOUNTS, V2_SELF, { [dir]: 'cpuset cpu io memory hugetlb pids rdma misc\n' }));
    assert.deepEqual(v2.site, { version: 2, below: 'own', memory: dir, pids: dir, mounts: ['/sys/fs/cgroup'] });
    const slice = '/sys/fs/cgroup/system.slice';
    assert.deepEqual(v2Parent?.site, { version: 2, below: 'parent', memory: slice, pids: slice, mounts: ['/sys/fs/cgroup'] });
    assert.equal(v1.reason, 'no cgroup v1 memory hierarchy is mounted');
    const without = cgroupCandidates(files(V2_MOUNTS, V2_SELF, { [dir]: 'cpu io\n' }));
    assert.equal(without.v2.reason, 'cgroup v2 at /sys/fs/cgroup has no memory or pids controller');
  });

  it('a container that mounts its own part of a hierarchy: paths below the mount’s root map under it, others are out of reach', () => {
    const mounts = '70 60 0:40 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw';
    const inside = cgroupCandidates(files(mounts, '0::/docker/abc/app\n', { '/sys/fs/cgroup/app': 'memory pids' }));
    assert.equal(inside.v2.site?.memory, '/sys/fs/cgroup/app');
    const root = cgroupCandidates(files(mounts, '0::/docker/abc\n', { '/sys/fs/cgroup': 'memory pids' }));
    assert.equal(root.v2.site?.memory, '/sys/fs/cgroup');
    assert.equal(root.v2Parent, undefined, 'nothing above the root of what the container sees');
    const outside = cgroupCandidates(files(mounts, '0::/elsewhere\n'));
    assert.equal(outside.v2.reason, "this process's cgroup v2 is not under /sys/fs/cgroup");
  });

  it('no cgroup mounted at all: each way says why', () => {
    const { v2, v1 } = cgroupCandidates(files('60 1 0:1 / /proc rw - proc proc rw', ''));
    assert.deepEqual([v2.reason, v1.reason], ['no cgroup v2 hierarchy is mounted', 'no cgroup v1 memory hierarchy is mounted']);
  });

  it('reads the parent from a rollout cgroup’s name, and nothing else as one', () => {
    assert.equal(cgroupOwner('turnstream-rollout-4242-7'), 4242);
    for (const name of ['turnstream-rollout-x-1', 'turnstream-sandbox-4242-ab', 'turnstream-rollout-4242-', 'process_api'])
      assert.equal(cgroupOwner(name), undefined, name);
  });
});
