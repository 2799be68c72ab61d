/**
 * The program lines that make a sandbox (bubblewrap's arguments, the unshare set-up script), the
 * system paths they mount, who they run as, and what is said where none can be made.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { bwrapArgs } from '../../../gym/sandbox/bwrap-sandbox.ts';
import { noSandboxMessage } from '../../../gym/sandbox/create-sandbox.ts';
import { sandboxUser } from '../../../gym/sandbox/detect-sandbox.ts';
import { installBubblewrap, shouldInstallBubblewrap } from '../../../gym/sandbox/install-bubblewrap.ts';
import type { Launch } from '../../../gym/sandbox/launch.ts';
import { systemMounts } from '../../../gym/sandbox/system-paths.ts';
import { unshareArgv, unshareSetupScript } from '../../../gym/sandbox/unshare-sandbox.ts';

const launch: Launch = {
  box: { dir: '/t/box/workspace', tmp: '/t/box/tmp', root: '/t/box/root' },
  system: [
    { kind: 'bind', path: '/usr' },
    { kind: 'symlink', path: '/bin', target: 'usr/bin' },
    { kind: 'bind', path: "/opt/it's" },
  ],
  env: { PATH: '/usr/bin', HOME: '/workspace' },
  cwd: '/workspace/sub',
  command: ['/usr/bin/prlimit', '--nproc=4', '--', 'sh', '-c', 'echo hi'],
};

const after = (args: string[], ...seq: string[]): number => {
  for (let i = 0; i + seq.length <= args.length; i++) if (seq.every((s, j) => args[i + j] === s)) return i;
  return -1;
};

describe('bubblewrap arguments', () => {
  const args = bwrapArgs(launch);

  it('new namespaces of every kind, a user namespace required, dying with its parent, in a new session', () => {
    for (const a of ['--unshare-all', '--unshare-user', '--die-with-parent', '--new-session']) assert.ok(args.includes(a), a);
  });

  it('the system read-only, the workspace and /tmp the only writable binds, the root and /dev remounted read-only after them', () => {
    assert.ok(after(args, '--ro-bind', '/usr', '/usr') >= 0);
    assert.ok(after(args, '--symlink', 'usr/bin', '/bin') >= 0);
    assert.deepEqual(
      args.flatMap((a, i) => (a === '--bind' ? [`${args[i + 1]}->${args[i + 2]}`] : [])),
      ['/t/box/workspace->/workspace', '/t/box/tmp->/tmp'],
    );
    assert.ok(after(args, '--remount-ro', '/') > after(args, '--bind', '/t/box/tmp', '/tmp'));
    assert.ok(after(args, '--remount-ro', '/dev') > after(args, '--dev', '/dev'));
  });

  it('a clean environment, the working directory, then the command after --', () => {
    assert.ok(after(args, '--clearenv') < after(args, '--setenv', 'PATH', '/usr/bin'));
    assert.ok(after(args, '--chdir', '/workspace/sub') >= 0);
    assert.deepEqual(args.slice(args.indexOf('--') + 1), launch.command);
  });
});

describe('the unshare set-up', () => {
  const script = unshareSetupScript(launch.system);

  it('is valid sh, quoting paths with quotes in them', () => {
    execFileSync('sh', ['-n', '-c', script]);
    assert.match(script, /mount --rbind '\/opt\/it'\\''s' "\$R"'\/opt\/it'\\''s'/);
  });

  it('remounts every system bind read-only with what is mounted below it, then /dev and the root', () => {
    assert.match(script, /p == r "\/usr" \|\| index\(p, r "\/usr\/"\) == 1/);
    assert.match(script, /mount -o remount,bind,ro "\$m"/);
    const lines = script.split('\n');
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    assert.ok(at(/remount,bind,ro "\$R\/dev"/) > at(/mount --bind "\$W"/));
    assert.ok(at(/remount,bind,ro "\$R"$/) > at(/remount,bind,ro "\$R\/dev"/));
  });

  it('runs the command under chroot as a child of the set-up shell (PID 1 stays out of reach), caps dropped', () => {
    assert.equal(script.split('\n').at(-1), 'chroot "$R" "$@"');
    const argv = unshareArgv({ unshare: '/usr/bin/unshare', sh: '/bin/sh', setpriv: '/usr/bin/setpriv', env: '/usr/bin/env' }, launch);
    for (const ns of ['--user', '--map-root-user', '--mount', '--pid', '--net', '--ipc', '--uts', '--fork', '--kill-child'])
      assert.ok(argv.includes(ns), ns);
    const inner = argv.slice(argv.indexOf('/t/box/tmp') + 1);
    assert.deepEqual(inner.slice(0, 5), ['/usr/bin/setpriv', '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--']);
    assert.deepEqual(inner.slice(5, 11), ['/usr/bin/env', '-i', '-C', '/workspace/sub', 'PATH=/usr/bin', 'HOME=/workspace']);
    assert.deepEqual(inner.slice(11), launch.command);
  });
});

describe('system paths', () => {
  it('binds folders, recreates symlinks, leaves out what the host lacks', async () => {
    const root = await mkdtemp('/var/tmp/ts-sys-'); // not under /tmp, the sandbox's own
    try {
      await mkdir(join(root, 'dir'));
      await symlink('dir', join(root, 'link'));
      assert.deepEqual(systemMounts([join(root, 'dir'), join(root, 'link'), join(root, 'missing')]), [
        { kind: 'bind', path: join(root, 'dir') },
        { kind: 'symlink', path: join(root, 'link'), target: 'dir' },
      ]);
    } finally {
      await rm(root, { recursive: true });
    }
  });

  it('refuses /, relative paths, "..", nesting and the sandbox’s own mounts', () => {
    for (const bad of [
      ['/'],
      ['usr'],
      ['/usr/../etc'],
      ['/usr', '/usr/lib'],
      ['/tmp'],
      ['/tmp/x'],
      ['/workspace'],
      ['/proc'],
      ['/dev'],
      ['/usr/'],
    ]) {
      assert.throws(
        () => systemMounts(bad),
        (err: Error & { code?: string; param?: string }) => err.code === 'TS_ERR_INVALID_INPUT' && err.param === 'systemPaths',
        JSON.stringify(bad),
      );
    }
  });
});

describe('who the sandbox runs as', () => {
  it('root runs it as an unprivileged user (RLIMIT_NPROC does not hold for uid 0); anyone else as themselves', () => {
    assert.deepEqual(sandboxUser(undefined, 0), { uid: 2_000_000_000, gid: 2_000_000_000 });
    assert.deepEqual(sandboxUser({ uid: 1234, gid: 99 }, 0), { uid: 1234, gid: 99 });
    assert.equal(sandboxUser(undefined, 1000), undefined);
    assert.throws(() => sandboxUser({ uid: 0, gid: 0 }, 0), /unprivileged/);
  });
});

describe('installing bubblewrap, and where no sandbox can be made', () => {
  it('installs only where bwrap is missing, as root with apt-get, not turned off, and bubblewrap may serve', () => {
    const base = { wanted: 'auto', found: false, canApt: true } as const;
    assert.equal(shouldInstallBubblewrap(base), true);
    assert.equal(shouldInstallBubblewrap({ ...base, wanted: 'bwrap' }), true);
    for (const over of [{ found: true }, { canApt: false }, { enabled: false }, { wanted: 'unshare' as const }]) {
      assert.equal(shouldInstallBubblewrap({ ...base, ...over }), false, JSON.stringify(over));
    }
  });

  it('apt-get installs Debian’s bubblewrap (waiting for another apt’s lock), updating the lists once when needed; a failure names the fix', async () => {
    const calls: string[] = [];
    const runner = (codes: number[]) => async (cmd: string, args: string[]) => {
      calls.push(`${cmd} ${args.join(' ')}`);
      return { code: codes.shift() ?? 0, output: 'E: Unable to locate package bubblewrap' };
    };
    await installBubblewrap(runner([0]));
    assert.deepEqual(calls, ['apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends bubblewrap']);
    await assert.rejects(installBubblewrap(runner([100, 0, 100])), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'TS_ERR_PREREQUISITE');
      assert.match(err.message, /could not install bubblewrap \(E: Unable to locate package bubblewrap\).*sudo apt-get install bubblewrap/);
      return true;
    });
  });

  it('one line with each way’s reason and the command that installs bubblewrap', () => {
    const message = noSandboxMessage(
      {
        kind: undefined,
        backends: [
          { kind: 'bwrap', available: false, reason: 'bwrap not found (sudo apt-get install bubblewrap)' },
          { kind: 'unshare', available: false, program: '/usr/bin/unshare', reason: 'unshare: unshare failed: Operation not permitted' },
        ],
        bwrapFound: false,
        canApt: false,
        fix: 'sudo apt-get install bubblewrap',
        caps: { by: 'per-process', detail: 'no cgroup v2 hierarchy is mounted; no cgroup v1 memory hierarchy is mounted' },
      },
      'auto',
    );
    assert.doesNotMatch(message, /\n/);
    assert.match(
      message,
      /^no sandbox can be made here, so nothing is run \(bwrap: bwrap not found .*; unshare: unshare: unshare failed: Operation not permitted\); install bubblewrap: sudo apt-get install bubblewrap$/,
    );
  });
});
