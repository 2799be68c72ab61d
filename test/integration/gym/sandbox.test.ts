/**
 * The sandbox for real, each guarantee on each way of making one (bubblewrap, and unshare where
 * bubblewrap cannot run): the host's files, network and processes out of reach, every limit
 * stopping what it is for, the caps of a rollout as a whole (its cgroup, where the host allows
 * one; the per-process limits where it does not), and bubblewrap installed once on a machine
 * without it. Processes are watched from the host by a marker in their command line; every wait
 * is on a condition.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { capsLine } from '../../../cli/commands/doctor.ts';
import { findExecutable } from '../../../core/index.ts';
import { createSandbox, detectSandbox, prepareSandbox, type CapsReport, type Sandbox, type SandboxOptions } from '../../../gym/index.ts';
import { janitorOf, reapCgroups } from '../../../gym/sandbox/cgroup-reaper.ts';
import { cgroupCandidates, hostCgroupFiles, type CgroupSite } from '../../../gym/sandbox/cgroup-site.ts';
import { reapOrphans } from '../../../gym/sandbox/reap-orphans.ts';
import { DEFAULT_SYSTEM_PATHS } from '../../../gym/sandbox/sandbox.ts';
import { waitFor } from '../../support/wait-for.ts';
import { assertEachRejected } from '../../support/settled.ts';

const REPO = new URL('../../../', import.meta.url).pathname;

/** Live processes (zombies have no command line) whose command line holds `marker`, or whose arguments pass `test`. */
function processesWith(marker: string | ((args: string[]) => boolean)): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const line = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (typeof marker === 'string' ? line.includes(marker) : line && marker(line.split('\0').slice(0, -1))) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The command `sh -c command` itself (not the sandbox's processes that name it among their arguments). */
const shell = (command: string) => (args: string[]) => args.length === 3 && args[0] === 'sh' && args[1] === '-c' && args[2] === command;

const marker = () => `tsmark${randomUUID().replaceAll('-', '')}`;

/** The host's MemAvailable, in bytes. */
const memAvailable = (): number => Number(/^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1]) * 1024;

/**
 * What the shared stack's Kafka needs left on the host while a rollout runs: its 1 GiB heap
 * (-Xmx1g) and the page cache its log is read through. No rollout may take the host below it.
 */
const KAFKA_FLOOR = 2 * 1024 ** 3;

/** Where the sandboxes' cgroups are made here: the site whose folders the caps report names. */
function siteOf(caps: CapsReport): CgroupSite {
  const { v2, v2Parent, v1 } = cgroupCandidates(hostCgroupFiles());
  const site = [v2.site, v2Parent?.site, v1.site].find((c) => c && c.memory === caps.folders?.memory && c.pids === caps.folders?.pids);
  assert.ok(site, `the site of ${JSON.stringify(caps)}`);
  return site;
}

/** The rollout cgroups of process `pid` at `site` (their memory cgroups' folders). */
const rolloutCgroups = (site: CgroupSite, pid: number): string[] =>
  readdirSync(site.memory)
    .filter((n) => n.startsWith(`turnstream-rollout-${pid}-`))
    .map((n) => join(site.memory, n));

/** 64 processes that each touch 1 GiB, 16 MiB at a time; prints how many started and how each ended. */
const MEMORY_HOG = [
  'import os, time',
  'kids = []',
  'for i in range(64):',
  '    pid = os.fork()',
  '    if pid == 0:',
  '        held = []',
  '        try:',
  '            for _ in range(64):',
  '                held.append(bytearray(b"x") * (16 << 20))',
  '                time.sleep(0.01)',
  '        except MemoryError:',
  '            os._exit(3)',
  '        os._exit(0)',
  '    kids.append(pid)',
  'killed = enomem = whole = 0',
  'for pid in kids:',
  '    _, st = os.waitpid(pid, 0)',
  '    killed += os.WIFSIGNALED(st) and os.WTERMSIG(st) == 9',
  '    enomem += os.WIFEXITED(st) and os.WEXITSTATUS(st) == 3',
  '    whole += os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0',
  'print(len(kids), killed, enomem, whole)',
].join('\n');

/** Forks up to `$1` children that stay until the file `go` exists, writes `ready-$2` with how many it forked and why it stopped, then waits for them. */
const HOLD_PROCESSES = [
  'import os, sys, time',
  'most, name = int(sys.argv[1]), sys.argv[2]',
  'n, why = 0, "none"',
  'try:',
  '    while n < most:',
  '        if os.fork() == 0:',
  '            deadline = time.time() + 60',
  '            while not os.path.exists("go") and time.time() < deadline: time.sleep(0.01)',
  '            os._exit(0)',
  '        n += 1',
  'except OSError as e:',
  '    why = type(e).__name__',
  'open("ready-" + name, "w").write(f"{n} {why}")',
  'try:',
  '    while True: os.wait()',
  'except ChildProcessError:',
  '    pass',
].join('\n');

for (const kind of ['bwrap', 'unshare'] as const) {
  describe(`the ${kind} sandbox`, () => {
    const open: Sandbox[] = [];
    const make = async (options: SandboxOptions = {}): Promise<Sandbox> => {
      const sb = await createSandbox({ kind, install: false, ...options });
      open.push(sb);
      return sb;
    };
    after(() => Promise.all(open.map((s) => s.dispose())));

    it('runs sh -c in the workspace set up from the task’s files, python3 for the code tool, and the verifier’s command', async () => {
      const sb = await make({ files: { 'low.txt': 'quiet words\n', 'data/n.txt': '41\n' } });
      assert.equal(sb.kind, kind);
      const r = await sb.sh('pwd; tr a-z A-Z < low.txt > up.txt; cat data/n.txt');
      assert.deepEqual(
        [r.exitCode, r.signal, r.stdout, r.truncated, r.timedOut, r.killedBy],
        [0, null, '/workspace\n41\n', false, false, undefined],
      );
      assert.equal(await sb.readFile('up.txt'), 'QUIET WORDS\n');
      const py = await sb.python('import math; print(math.comb(10, 3) + int(open("data/n.txt").read()))');
      assert.deepEqual([py.exitCode, py.stdout], [0, '161\n']);
      await sb.writeFile('answer.txt', '42\n');
      assert.equal((await sb.sh('grep -qx 42 answer.txt')).exitCode, 0, 'verify.command passes');
      assert.equal((await sb.sh("grep -qx 'QUIET WORDS' nope.txt")).exitCode, 2, 'and fails');
      const piped = await sb.exec(['sh', '-c', 'cat; echo " $X"'], { stdin: 'from stdin', env: { X: 'and env' }, cwd: 'data' });
      assert.equal(piped.stdout, 'from stdin and env\n');
    });

    describe('the host’s files', () => {
      let canary: string;
      before(async () => {
        // a host folder the sandbox sees read-only, next to the system (not under /tmp, which is the sandbox's own)
        canary = await mkdtemp('/var/tmp/turnstream-canary-');
        await writeFile(join(canary, 'keep.txt'), 'still here');
        await chmod(canary, 0o755);
        await chmod(join(canary, 'keep.txt'), 0o644);
      });
      after(() => rm(canary, { recursive: true, force: true }));

      it('rm -rf --no-preserve-root / changes nothing on the host', { timeout: 180_000 }, async () => {
        const sb = await make({ systemPaths: [...DEFAULT_SYSTEM_PATHS, canary], files: { 'a.txt': 'a' }, limits: { wallMs: 150_000 } });
        // first a harmless write to the system: rm -rf / runs only where the system is read-only
        const probe = await sb.sh(`touch /usr/turnstream-probe ${canary}/probe`);
        assert.notEqual(probe.exitCode, 0);
        assert.match(probe.stderr, /Read-only file system/);
        assert.ok(!existsSync('/usr/turnstream-probe') && !existsSync(join(canary, 'probe')), 'the probe wrote nothing on the host');

        const r = await sb.sh('rm -rf --no-preserve-root / 2>/dev/null; echo "rm exited $?"; ls -A /workspace | wc -l');
        assert.equal(r.stdout, 'rm exited 1\n0\n', 'rm ran (the workspace, writable, is empty) and failed elsewhere');
        assert.equal(readFileSync(join(canary, 'keep.txt'), 'utf8'), 'still here');
        for (const p of ['/usr/bin/sh', '/usr/bin/rm', '/etc/passwd', '/usr/lib/os-release', join(REPO, 'package.json')])
          assert.ok(existsSync(p), p);
        assert.ok((await sb.sh('true')).exitCode === 0, 'the sandbox still runs');
      });

      it('writes outside the workspace fail and change nothing on the host; /tmp is the sandbox’s own', async () => {
        const m = marker();
        const sb = await make({ systemPaths: [...DEFAULT_SYSTEM_PATHS, canary] });
        const targets = [`/usr/${m}`, `/etc/${m}`, `/${m}`, `/dev/${m}`, `${canary}/${m}`, `/proc/${m}`, `/usr/bin/sh`];
        const r = await sb.sh(
          [
            `for p in ${targets.join(' ')}; do (echo pwned > "$p") 2>/dev/null && echo "wrote $p"; done`,
            'mount -o remount,rw /usr 2>/dev/null && echo remounted',
            `mkdir -p /usr/local/${m} 2>/dev/null && echo made`,
            `echo mine > /tmp/${m} && cat /tmp/${m}`,
          ].join('\n'),
        );
        assert.equal(r.stdout, 'mine\n', r.stdout);
        for (const p of targets.slice(0, -1)) assert.ok(!existsSync(p), `${p} not on the host`);
        assert.ok(!existsSync(`/usr/local/${m}`));
        assert.notEqual(readFileSync('/usr/bin/sh').length, 'pwned\n'.length);
        assert.ok(!existsSync(`/tmp/${m}`), "the sandbox's /tmp is not the host's");
        assert.equal(readFileSync(join(sb.hostWorkspace, '..', 'tmp', m), 'utf8'), 'mine\n', 'it is in the sandbox’s folder');
      });
    });

    describe('the network', () => {
      let server: Server;
      let port: number;
      let accepted = 0;
      before(async () => {
        server = createServer((s) => {
          accepted++;
          s.end('hello');
        });
        await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
        port = (server.address() as { port: number }).port;
      });
      after(() => new Promise<void>((r) => server.close(() => r())));

      it('a socket to 127.0.0.1 fails: a server the host can reach is out of the sandbox’s reach', async () => {
        await new Promise<void>((resolve, reject) =>
          connect(port, '127.0.0.1')
            .once('data', () => resolve())
            .once('error', reject),
        );
        assert.equal(accepted, 1, 'the host reaches it');
        const sb = await make();
        const r = await sb.python(
          [
            'import socket',
            `for host in ("127.0.0.1", "1.1.1.1"):`,
            '    try:',
            `        socket.create_connection((host, ${port} if host == "127.0.0.1" else 80), timeout=3); print(host, "connected")`,
            '    except OSError as e:',
            '        print(host, type(e).__name__)',
          ].join('\n'),
        );
        assert.equal(r.exitCode, 0, r.stderr);
        assert.match(r.stdout, /^127\.0\.0\.1 (ConnectionRefusedError|OSError)\n1\.1\.1\.1 (OSError|TimeoutError)\n$/, r.stdout);
        assert.equal(accepted, 1, 'no connection from the sandbox');
        const ifaces = await sb.sh('cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "');
        assert.equal(ifaces.stdout, 'lo\n', 'an empty network namespace: the loopback only');
      });
    });

    it('the host’s processes are out of sight (a PID namespace of its own)', async () => {
      const m = marker();
      const host = spawn('python3', ['-c', 'import time; time.sleep(600)', m], { stdio: 'ignore' });
      try {
        await waitFor('the host process', () => processesWith(m).length === 1);
        const sb = await make();
        // the marker is never whole in the sandbox's own command lines: it is put together inside
        const r = await sb.python(
          [
            'import os',
            `m = ${JSON.stringify(m.slice(0, 10))} + ${JSON.stringify(m.slice(10))}`,
            'pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]',
            'seen = 0',
            'for p in pids:',
            '    try: seen += m.encode() in open(f"/proc/{p}/cmdline", "rb").read()',
            '    except OSError: pass',
            'try:',
            `    os.kill(${host.pid}, 0); signalled = True`,
            'except OSError:',
            '    signalled = False',
            'print(seen, signalled, os.getpid(), len(pids))',
          ].join('\n'),
        );
        const [seen, signalled, pid, count] = r.stdout.trim().split(' ');
        assert.equal(seen, '0', 'no host process in /proc');
        assert.equal(signalled, 'False', 'a host pid cannot be signalled');
        assert.ok(Number(pid) < 100, `its own pids, counted from 1 (python is ${pid})`);
        assert.ok(Number(count) < 10, `a handful of processes in /proc, not the host's (${count})`);
      } finally {
        host.kill('SIGKILL');
      }
    });

    it('the process limit holds: forks past it fail', async () => {
      const sb = await make({ limits: { processes: 12 } });
      const r = await sb.python(
        [
          'import os, time',
          'n = 0',
          'try:',
          '    while n < 100:',
          '        if os.fork() == 0:',
          '            time.sleep(30); os._exit(0)',
          '        n += 1',
          'except OSError as e:',
          '    print(n, type(e).__name__)',
        ].join('\n'),
      );
      const [n, error] = r.stdout.trim().split(' ');
      assert.equal(error, 'BlockingIOError', r.stdout + r.stderr);
      assert.ok(Number(n) < 12 && Number(n) >= 8, `${n} children next to the sandbox's own processes, within 12`);
      assert.ok(r.wallMs < 10_000, 'the sleeping children die with the command');
    });

    /** Runs a command while counting, from the host, its processes alive at once. */
    const watched = async (sb: Sandbox, m: string, command: string) => {
      let most = 0;
      const watch = setInterval(() => void (most = Math.max(most, processesWith(m).length)), 5);
      try {
        const run = sb.sh(command);
        await waitFor('the command', () => most >= 3);
        assert.equal(spawnSync('true').status, 0, 'the host still forks');
        return { result: await run, most: () => most };
      } finally {
        clearInterval(watch);
      }
    };

    it('a fork bomb is stopped within seconds; the host keeps forking and nothing of it is left', { timeout: 60_000 }, async () => {
      const m = marker();
      const sb = await make({ limits: { processes: 16, wallMs: 3000 } });
      const { result: r, most } = await watched(sb, m, `b(){ b|b& }; b; exec sleep 600 # ${m}`);
      assert.equal(r.timedOut, true);
      assert.equal(r.killedBy, 'pids', r.stderr.slice(0, 200));
      assert.ok(r.wallMs < 6000, `stopped in ${r.wallMs} ms`);
      assert.ok(most() <= 16 + 2, `at most the limit (16), the sandbox's outer process and init alive at once; saw ${most()}`);
      await waitFor('every process of the bomb gone', () => processesWith(m).length === 0, { timeoutMs: 5000 });
    });

    it('a fork bomb that never gives up is held at the process limit until the wall clock kills it all', { timeout: 60_000 }, async () => {
      const m = marker();
      const sb = await make({ limits: { processes: 12, wallMs: 2000 } });
      // every process forks for ever and shrugs off each failure (dash, by contrast, exits on a failed fork)
      const bomb = 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass';
      const { result: r, most } = await watched(sb, m, `python3 -c '${bomb}' ${m}`);
      assert.deepEqual([r.timedOut, r.killedBy, r.signal], [true, 'wall', 'SIGKILL']);
      assert.ok(r.wallMs < 5000, `stopped in ${r.wallMs} ms`);
      assert.ok(most() >= 12 - 3 && most() <= 12 + 2, `held at the limit (12, with the outer process and init): saw ${most()}`);
      await waitFor('every process of the bomb gone', () => processesWith(m).length === 0, { timeoutMs: 5000 });
    });

    it('a command that waits for all its children ends when they do (the lifeline’s watchdog is not one of them)', async () => {
      const sb = await make({ limits: { wallMs: 10_000 } });
      const r = await sb.python(
        'import os\nif os.fork() == 0: os._exit(7)\nends = []\ntry:\n    while True: ends.append(os.wait()[1] >> 8)\nexcept ChildProcessError:\n    print(ends)',
      );
      assert.deepEqual([r.stdout, r.timedOut], ['[7]\n', false]);
    });

    it('an endless loop is stopped by the CPU limit', { timeout: 60_000 }, async () => {
      const sb = await make({ limits: { cpuSeconds: 1, wallMs: 45_000 } });
      const r = await sb.sh('while :; do :; done');
      assert.deepEqual([r.exitCode, r.signal, r.killedBy, r.timedOut], [null, 'SIGXCPU', 'cpu', false]);
    });

    it('a command that never ends is killed at the wall clock, with everything it started', { timeout: 60_000 }, async () => {
      const m = marker();
      const sb = await make({ limits: { wallMs: 1500 } });
      const run = sb.sh(`python3 -c 'import os, time; os.fork(); os.fork(); time.sleep(600)' ${m} & sleep 600 # ${m}`);
      await waitFor('four sleepers and the shell', () => processesWith(m).length >= 5);
      const r = await run;
      assert.deepEqual([r.exitCode, r.signal, r.killedBy, r.timedOut], [null, 'SIGKILL', 'wall', true]);
      assert.ok(r.wallMs >= 1500 && r.wallMs < 5000, `${r.wallMs} ms`);
      await waitFor('no process of it left', () => processesWith(m).length === 0, { timeoutMs: 5000 });
    });

    it('100 MB of output is cut at the limit and the command stopped, on stdout or stderr', { timeout: 60_000 }, async () => {
      const sb = await make({ limits: { outputBytes: 64 * 1024 } });
      const heapBefore = process.memoryUsage().arrayBuffers;
      for (const redirect of ['', '>&2']) {
        const r = await sb.sh(`head -c 100000000 /dev/zero | tr '\\0' x ${redirect}`);
        assert.equal(r.stdout.length + r.stderr.length, 64 * 1024);
        assert.deepEqual([r.truncated, r.killedBy, r.signal], [true, 'output', 'SIGKILL']);
        assert.ok(r.wallMs < 10_000);
      }
      assert.ok(process.memoryUsage().arrayBuffers - heapBefore < 20 * 1024 * 1024, 'the parent held about the limit, not the output');
      const whole = await sb.sh('head -c 1000 /dev/zero | tr "\\0" y');
      assert.deepEqual([whole.stdout.length, whole.truncated, whole.killedBy], [1000, false, undefined]);
    });

    it('an allocation past the memory limit fails; one within it works', async () => {
      const sb = await make({ limits: { memoryBytes: 256 * 1024 * 1024 } });
      const big = await sb.python('x = bytearray(512 * 1024 * 1024)');
      assert.equal(big.exitCode, 1);
      assert.equal(big.killedBy, 'memory', big.stderr);
      const small = await sb.python('x = bytearray(16 * 1024 * 1024); print(len(x))');
      assert.deepEqual([small.exitCode, small.stdout], [0, '16777216\n']);
    });

    it('64 processes × 1 GiB in one rollout stay under its memory cap; the host keeps what Kafka needs', { timeout: 240_000 }, async () => {
      const sb = await make({ caps: { processes: 128 }, limits: { processes: 128, wallMs: 180_000, cpuSeconds: 120 } });
      if (sb.caps.by === 'per-process') {
        // no cgroup here: the sandbox says so, and what holds instead is each process's 1 GiB (64 of them would not be capped together)
        assert.match(sb.caps.detail, /\S/);
        assert.deepEqual([sb.caps.memoryBytes, sb.usage()], [undefined, undefined]);
        const r = await sb.python('x = bytearray(2 << 30)');
        assert.equal(r.killedBy, 'memory', r.stderr);
        return;
      }
      const cap = sb.caps.memoryBytes as number;
      assert.equal(cap, 1024 ** 3, 'the default cap: 1 GiB for the rollout');
      const before = memAvailable();
      let lowest = before;
      const watch = setInterval(() => void (lowest = Math.min(lowest, memAvailable())), 20);
      let r;
      try {
        r = await sb.python(MEMORY_HOG);
      } finally {
        clearInterval(watch);
      }
      lowest = Math.min(lowest, memAvailable());
      const [started, killed, enomem, whole] = r.stdout.trim().split(' ').map(Number);
      assert.equal(r.exitCode, 0, r.stderr);
      assert.equal(started, 64, 'all 64 ran (their process cap is 128)');
      assert.equal(killed + enomem + whole, 64);
      assert.ok(killed > 0, `the kernel killed the rollout's own processes at the cap (${killed} killed, ${enomem} out of address space)`);
      const usage = sb.usage();
      assert.ok(usage?.memoryPeakBytes !== undefined, 'the cgroup reports its peak');
      assert.ok(usage.memoryPeakBytes <= cap, `peak ${usage.memoryPeakBytes} ≤ cap ${cap}`);
      assert.ok(usage.memoryPeakBytes > 0.9 * cap, `the processes pressed against the cap (peak ${usage.memoryPeakBytes})`);
      assert.ok(usage.oomKills >= killed, `the cgroup counted its kills (${usage.oomKills})`);
      const gib = (b: number) => (b / 1024 ** 3).toFixed(2);
      assert.ok(
        lowest >= KAFKA_FLOOR,
        `the host's MemAvailable stayed above what Kafka needs: lowest ${gib(lowest)} GiB (before ${gib(before)} GiB) ≥ ${gib(KAFKA_FLOOR)} GiB`,
      );
    });

    it('the process cap holds for the rollout: two commands at once share it', { timeout: 60_000 }, async () => {
      const sb = await make({ caps: { processes: 24 }, limits: { processes: 64 } });
      if (sb.caps.by === 'per-process') {
        // no cgroup here: each command has its own count (RLIMIT_NPROC in its own user namespace), which holds
        const run = sb.exec(['python3', '-c', HOLD_PROCESSES, '80', 'a']);
        await waitFor('the command’s children', () => existsSync(join(sb.hostWorkspace, 'ready-a')));
        await sb.writeFile('go', '');
        assert.equal((await run).exitCode, 0);
        const [n, why] = (await sb.readFile('ready-a')).split(' ');
        assert.ok(Number(n) < 64 && why === 'BlockingIOError', `${n} ${why}`);
        return;
      }
      // the first holds 8 children; the second forks until it cannot: 40 would fit its own limit (64), not the rollout's cap (24)
      const first = sb.exec(['python3', '-c', HOLD_PROCESSES, '8', 'a']);
      await waitFor('the first command’s 8 children', () => existsSync(join(sb.hostWorkspace, 'ready-a')));
      const second = sb.exec(['python3', '-c', HOLD_PROCESSES, '40', 'b']);
      await waitFor('the second command’s children', () => existsSync(join(sb.hostWorkspace, 'ready-b')));
      const held = sb.usage()?.processes ?? 0;
      await sb.writeFile('go', '');
      assert.deepEqual([(await first).exitCode, (await second).exitCode], [0, 0]);
      const [a, b] = [await sb.readFile('ready-a'), await sb.readFile('ready-b')].map((t) => t.split(' '));
      assert.deepEqual(a, ['8', 'none']);
      assert.equal(b[1], 'BlockingIOError', 'the second command’s forks failed');
      assert.ok(8 + Number(b[0]) < 24, `both commands' children (8 + ${b[0]}) and their sandboxes' own processes fit in 24`);
      assert.ok(held <= 24, `${held} processes at once in the rollout`);
      const peak = sb.usage()?.processesPeak;
      if (peak !== undefined) assert.ok(peak <= 24 && peak >= 20, `the rollout's peak: ${peak} of 24`);
    });

    it('a file past the file-size limit is cut and its writer stopped', async () => {
      const sb = await make({ limits: { fileBytes: 1_000_000 } });
      const r = await sb.sh('head -c 2000000 /dev/zero > big.bin');
      assert.equal(r.signal, 'SIGXFSZ');
      assert.equal(statSync(join(sb.hostWorkspace, 'big.bin')).size, 1_000_000);
    });

    it('orphans are reaped: only live processes count toward the limit', async () => {
      const sb = await make({ limits: { processes: 8 } });
      // 40 orphans, each waited on (a condition inside) until the sandbox's init has reaped it
      const r = await sb.python(
        [
          'import os, time',
          'live = lambda: len([p for p in os.listdir("/proc") if p.isdigit()])',
          'base = live()',
          'for i in range(40):',
          '    if os.fork() == 0:',
          '        if os.fork() == 0: os._exit(0)',
          '        os._exit(0)',
          '    os.wait()',
          '    deadline = time.time() + 5',
          '    while live() > base and time.time() < deadline: time.sleep(0.002)',
          '    assert live() == base, "an orphan was never reaped"',
          'print("done")',
        ].join('\n'),
      );
      assert.deepEqual([r.exitCode, r.stdout, r.stderr], [0, 'done\n', '']);
    });

    it('the sandbox dies with the process that made it (kill -9): nothing is left running', { timeout: 60_000 }, async () => {
      const m = marker();
      const tmpRoot = await mkdtemp('/tmp/turnstream-test-');
      await chmod(tmpRoot, 0o755); // reachable by the user a root process runs sandboxes as
      const code = [
        `import { createSandbox } from ${JSON.stringify(join(REPO, 'gym/index.ts'))};`,
        `const sb = await createSandbox({ kind: '${kind}', install: false, tmpRoot: ${JSON.stringify(tmpRoot)} });`,
        `await sb.sh('sleep 600 & sleep 600 # ' + '${m}');`,
      ].join('\n');
      const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: REPO, stdio: 'ignore' });
      try {
        await waitFor('the sandbox of the child process', () => processesWith(shell(`sleep 600 & sleep 600 # ${m}`)).length === 1, {
          timeoutMs: 30_000,
        });
        parent.kill('SIGKILL');
        await waitFor('no process of it left', () => processesWith(m).length === 0, { timeoutMs: 5000 });
        assert.equal(readdirSync(tmpRoot).length, 1, 'its folder stays, as a killed process cannot remove it');
        await make({ tmpRoot });
        assert.equal(readdirSync(tmpRoot).length, 1, 'until the next sandbox clears it');
      } finally {
        parent.kill('SIGKILL');
        await rm(tmpRoot, { recursive: true, force: true }); // what a killed process cannot remove: its files
      }
    });

    it('a parent killed while its sandboxes start leaves nothing running (the lifeline)', { timeout: 60_000 }, async () => {
      const m = marker();
      const tmpRoot = await mkdtemp('/tmp/turnstream-test-');
      await chmod(tmpRoot, 0o755);
      // a command starts every 5 ms, so whenever the parent dies some sandboxes are in their first milliseconds
      const code = [
        `import { createSandbox } from ${JSON.stringify(join(REPO, 'gym/index.ts'))};`,
        `const sb = await createSandbox({ kind: '${kind}', install: false, tmpRoot: ${JSON.stringify(tmpRoot)} });`,
        `setInterval(() => void sb.sh('sleep 600 # ' + '${m}').catch(() => undefined), 5);`,
      ].join('\n');
      const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: REPO, stdio: 'ignore' });
      try {
        await waitFor('commands running', () => processesWith(shell(`sleep 600 # ${m}`)).length >= 3, { timeoutMs: 30_000 });
        parent.kill('SIGKILL');
        await once(parent, 'exit');
        // every command is stopped by its lifeline; a bubblewrap killed in its first milliseconds
        // stays blocked in its set-up, running nothing, until the next sandbox clears it
        await waitFor('no command left', () => processesWith(shell(`sleep 600 # ${m}`)).length === 0, { timeoutMs: 5000 });
        // (a sandbox whose start the parent's death caught may show up a moment later: reap until none is left)
        await waitFor(
          'every process of it reaped',
          async () => {
            if (processesWith(m).length === 0) return true;
            await reapOrphans(tmpRoot);
            return false;
          },
          { timeoutMs: 10_000, intervalMs: 20 },
        );
        const next = await make({ tmpRoot });
        assert.deepEqual(readdirSync(tmpRoot), [join(next.hostWorkspace, '..').split('/').at(-1)], 'the dead parent’s folders removed');
      } finally {
        parent.kill('SIGKILL');
        await rm(tmpRoot, { recursive: true, force: true });
      }
    });

    it('aborting a command kills it; dispose kills what runs and removes the workspace', async () => {
      const m = marker();
      const sb = await make();
      const ac = new AbortController();
      const run = sb.sh(`sleep 600 # ${m}`, { signal: ac.signal });
      await waitFor('the command', () => processesWith(m).length >= 2);
      ac.abort();
      await assert.rejects(run, (err: Error & { code?: string }) => err.code === 'TS_ERR_ABORTED');
      await waitFor('no process of it left', () => processesWith(m).length === 0, { timeoutMs: 5000 });

      const m2 = marker();
      const running = sb.sh(`mkdir -p locked/in && touch locked/in/f && chmod 000 locked; sleep 600 # ${m2}`);
      await waitFor('the command', () => processesWith(m2).length >= 2);
      const box = join(sb.hostWorkspace, '..');
      await sb.dispose();
      await assert.rejects(running, (err: Error & { code?: string }) => err.code === 'TS_ERR_ABORTED');
      assert.equal(processesWith(m2).length, 0);
      assert.ok(!existsSync(box), 'the workspace is gone');
      await assert.rejects(sb.sh('true'), /disposed/);
    });

    it(
      'a command killed as its sandbox starts leaves nothing running (the init is found by the pipes it holds)',
      { timeout: 60_000 },
      async () => {
        const m = marker();
        const sb = await make();
        for (let i = 0; i < 20; i++) {
          const ac = new AbortController();
          const run = sb.sh(`sleep 600 # ${m}`, { signal: ac.signal });
          // the abort lands 0 to 9 ms into the start, before and after the init asks to die with its parent
          await new Promise((r) => setTimeout(r, i % 10)); // deliberate: sweeps the start's first milliseconds
          ac.abort();
          await assert.rejects(run, (err: Error & { code?: string }) => err.code === 'TS_ERR_ABORTED');
        }
        await waitFor('no process of them left', () => processesWith(m).length === 0, { timeoutMs: 5000 });
        const tiny = await sb.sh(`sleep 600 # ${m}`, { limits: { wallMs: 1 } });
        assert.equal(tiny.killedBy, 'wall');
        await waitFor('none after a 1 ms wall clock either', () => processesWith(m).length === 0, { timeoutMs: 5000 });
      },
    );

    it('the parent’s reads and writes refuse symlinks a command made to leave the workspace', async () => {
      const sb = await make();
      await sb.sh('ln -s /etc/passwd out; ln -s .. up; ln -s ../../.. far; echo in > real.txt; ln -s real.txt near');
      for (const path of ['out', 'far/etc/passwd']) {
        await assert.rejects(sb.readFile(path), (err: Error & { code?: string }) => err.code === 'TS_ERR_INVALID_INPUT', path);
      }
      await assert.rejects(sb.writeFile('up/escaped.txt', 'x'), (err: Error & { code?: string }) => err.code === 'TS_ERR_INVALID_INPUT');
      await assert.rejects(sb.readFile('../x'), (err: Error & { code?: string }) => err.code === 'TS_ERR_INVALID_INPUT');
      await assert.rejects(sb.readFile('/etc/passwd'), (err: Error & { code?: string }) => err.code === 'TS_ERR_INVALID_INPUT');
      assert.ok(!existsSync(join(sb.hostWorkspace, '..', 'escaped.txt')));
      assert.equal(await sb.readFile('near'), 'in\n');
    });
  });
}

describe('a rollout’s cgroup', () => {
  const open: Sandbox[] = [];
  after(() => Promise.all(open.map((s) => s.dispose())));

  it('doctor and every sandbox say how the caps are kept: a cgroup (v2, else v1) where the host allows one, else per process only and why', async () => {
    const report = await detectSandbox();
    const sb = await createSandbox({ install: false });
    open.push(sb);
    assert.deepEqual([sb.caps.by, sb.caps.folders], [report.caps.by, report.caps.folders]);
    assert.match(report.caps.detail, /\S/);
    if (report.caps.by === 'per-process') {
      assert.equal(sb.usage(), undefined);
      assert.match(capsLine(report.caps), /^per process only \(1 GiB of address space and 64 processes per command\): \S/);
      return;
    }
    assert.match(
      capsLine(report.caps),
      /^per rollout by cgroup v[12]: 1 GiB and 64 processes for all its processes together \(a cgroup per sandbox in \//,
    );
    assert.deepEqual([sb.caps.memoryBytes, sb.caps.processes], [1024 ** 3, 64]);
    const site = siteOf(report.caps);
    // this host (cgroup v1 memory and pids, an empty v2 beside them) is the hybrid the code expects
    if (report.caps.by === 'cgroup-v1') assert.ok(statSync(join(site.memory, 'memory.limit_in_bytes')).isFile());
  });

  it('turned off, or where the host allows none: per process only, and the per-process limits hold', async () => {
    const report = await detectSandbox({ cgroup: 'off' });
    assert.deepEqual(report.caps, { by: 'per-process', detail: 'cgroups turned off (SandboxOptions.cgroup)' });
    assert.match(capsLine(report.caps), /^per process only .*: cgroups turned off/);
    const sb = await createSandbox({ install: false, cgroup: 'off', limits: { memoryBytes: 256 * 1024 * 1024 } });
    open.push(sb);
    assert.deepEqual([sb.caps.by, sb.caps.memoryBytes, sb.usage()], ['per-process', undefined, undefined]);
    const big = await sb.python('x = bytearray(512 * 1024 * 1024)');
    assert.deepEqual([big.exitCode, big.killedBy], [1, 'memory'], big.stderr);
    const fork = await sb.python(
      'import os\nn = 0\ntry:\n    while n < 100:\n        if os.fork() == 0: os.pause()\n        n += 1\nexcept OSError:\n    print(n)',
      {
        limits: { processes: 10 },
      },
    );
    assert.ok(Number(fork.stdout) < 10, `forks stop at the command's own limit: ${fork.stdout}`);
  });

  it('made with the sandbox, before its first command; removed when it is disposed', async () => {
    const probe = await detectSandbox();
    if (probe.caps.by === 'per-process') {
      const sb = await createSandbox({ install: false });
      await sb.dispose();
      assert.deepEqual([sb.caps.by, sb.usage()], ['per-process', undefined]);
      return;
    }
    const site = siteOf(probe.caps);
    const before = new Set(rolloutCgroups(site, process.pid));
    const sb = await createSandbox({ install: false });
    const made = rolloutCgroups(site, process.pid).filter((d) => !before.has(d));
    assert.equal(made.length, 1, 'its cgroup is there before any command');
    const name = made[0].split('/').at(-1) as string;
    assert.equal(readFileSync(join(made[0], 'cgroup.procs'), 'utf8'), '', 'and empty');
    // a command's processes are in it, in every hierarchy, from the start
    const m = marker();
    const ac = new AbortController();
    const run = sb.sh(`sleep 600 # ${m}`, { signal: ac.signal });
    const [pid] = await waitFor('the command', () => {
      const found = processesWith(shell(`sleep 600 # ${m}`));
      return found.length ? found : undefined;
    });
    const cgroups = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    const inIt = cgroups.split('\n').filter((l) => l.endsWith(`/${name}`));
    assert.equal(inIt.length, site.version === 2 ? 1 : 2, cgroups);
    ac.abort();
    await assert.rejects(run, (err: Error & { code?: string }) => err.code === 'TS_ERR_ABORTED');
    await sb.dispose();
    assert.equal(existsSync(made[0]), false, 'removed');
    assert.equal(existsSync(join(site.pids, name)), false, 'in every hierarchy');
  });

  it(
    'a parent killed with kill -9: its janitor kills what is left and removes its cgroups; a janitor killed too, the next run does',
    { timeout: 90_000 },
    async () => {
      const probe = await detectSandbox();
      if (probe.caps.by === 'per-process') {
        assert.match(probe.caps.detail, /\S/); // nothing to remove where no cgroup is made
        return;
      }
      const site = siteOf(probe.caps);
      const tmpRoot = await mkdtemp('/tmp/turnstream-test-');
      await chmod(tmpRoot, 0o755);
      const run = (m: string) => {
        const code = [
          `import { createSandbox } from ${JSON.stringify(join(REPO, 'gym/index.ts'))};`,
          `import { janitorOf } from ${JSON.stringify(join(REPO, 'gym/sandbox/cgroup-reaper.ts'))};`,
          `const sbs = await Promise.all([1, 2].map(() => createSandbox({ install: false, tmpRoot: ${JSON.stringify(tmpRoot)} })));`,
          `console.log(janitorOf(${JSON.stringify(probe.caps.folders)}));`,
          `for (const sb of sbs) void sb.sh('sleep 600 # ' + '${m}');`,
        ].join('\n');
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
          cwd: REPO,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        let out = '';
        child.stdout.on('data', (d: Buffer) => void (out += d.toString()));
        return { child, janitor: () => Number(out.trim()) || undefined };
      };
      const m1 = marker();
      const a = run(m1);
      try {
        await waitFor('two sandboxed commands of the child', () => processesWith(shell(`sleep 600 # ${m1}`)).length === 2, {
          timeoutMs: 30_000,
        });
        assert.equal(rolloutCgroups(site, a.child.pid as number).length, 2, 'a cgroup for each of its sandboxes');
        assert.ok(a.janitor(), 'its janitor runs');
        a.child.kill('SIGKILL');
        await waitFor('its cgroups removed by its janitor', () => rolloutCgroups(site, a.child.pid as number).length === 0, {
          timeoutMs: 15_000,
        });
        await waitFor('nothing of it left running', () => processesWith(m1).length === 0, { timeoutMs: 5000 });

        // the janitor killed with it (a whole process tree killed at once): the next run clears what is left
        const m2 = marker();
        const b = run(m2);
        await waitFor('two sandboxed commands of the second child', () => processesWith(shell(`sleep 600 # ${m2}`)).length === 2, {
          timeoutMs: 30_000,
        });
        await waitFor('the second child’s janitor', () => b.janitor());
        process.kill(b.janitor() as number, 'SIGKILL');
        b.child.kill('SIGKILL');
        await once(b.child, 'exit');
        // the lifeline stops the commands; their cgroups stay, emptied, with nobody to remove them
        await waitFor('its commands stopped', () => processesWith(shell(`sleep 600 # ${m2}`)).length === 0, { timeoutMs: 5000 });
        assert.equal(rolloutCgroups(site, b.child.pid as number).length, 2, 'left behind');
        // a leftover that still holds a process, as one whose lifeline never ran would
        const stray = spawn('sleep', ['600'], { stdio: 'ignore' });
        const left = rolloutCgroups(site, b.child.pid as number)[0];
        writeFileSync(join(left, 'cgroup.procs'), String(stray.pid));
        if (site.version === 1) writeFileSync(join(site.pids, left.split('/').at(-1) as string, 'cgroup.procs'), String(stray.pid));
        const strayEnd = once(stray, 'exit');
        assert.ok((await reapCgroups(site)) >= 2, 'both removed (and any other dead run’s)');
        assert.deepEqual(await strayEnd, [null, 'SIGKILL'], 'what was in it is killed');
        assert.equal(rolloutCgroups(site, b.child.pid as number).length, 0);
        assert.ok(janitorOf(site) !== undefined, 'this process has a janitor of its own');
      } finally {
        a.child.kill('SIGKILL');
        await rm(tmpRoot, { recursive: true, force: true });
      }
    },
  );
});

describe('bubblewrap missing on a fresh machine', () => {
  const real = findExecutable('bwrap') as string;

  /**
   * A machine state without bwrap: a folder whose bin/ has none, and a fake installer that fails
   * as dpkg does when another install holds its lock, records each run, takes a while, and then
   * puts a bwrap (the real one, linked) in bin/. With `--after-waiter` it finishes only once
   * another process waits for the install lock.
   */
  const freshMachine = async () => {
    const dir = await mkdtemp('/tmp/turnstream-fresh-');
    await chmod(dir, 0o755);
    await mkdir(join(dir, 'bin'));
    const script = join(dir, 'install-bubblewrap.sh');
    await writeFile(
      script,
      [
        '#!/bin/sh',
        `D=${dir}`,
        'echo $$ >> "$D/runs"',
        'mkdir "$D/installing" 2>/dev/null || { echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process $(cat "$D/installing/pid")" >&2; exit 100; }',
        'echo $$ > "$D/installing/pid"',
        'if [ "$1" = --after-waiter ]; then i=0; until [ -e "$D/waiter" ] || [ $i -gt 1200 ]; do i=$((i + 1)); sleep 0.05; done; fi',
        'sleep 0.5',
        `ln -s ${real} "$D/bin/bwrap"`,
        'rm -r "$D/installing"',
      ].join('\n'),
    );
    await chmod(script, 0o755);
    const runs = async () => (await readFile(join(dir, 'runs'), 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
    const options = (installCommand: string[] = [script]): SandboxOptions => ({
      kind: 'bwrap',
      bwrapPath: join(dir, 'bin', 'bwrap'),
      installCommand,
      installLock: join(dir, 'install'),
      logger: { info: () => undefined },
    });
    return { dir, script, runs, options };
  };

  it('six rollouts start at once: one install, and all six run in bubblewrap', { timeout: 60_000 }, async () => {
    const m = await freshMachine();
    try {
      assert.equal(existsSync(join(m.dir, 'bin', 'bwrap')), false);
      const sbs = await Promise.all(Array.from({ length: 6 }, () => createSandbox(m.options())));
      try {
        assert.equal(await m.runs(), 1, 'the installer ran once');
        const rs = await Promise.all(sbs.map((sb) => sb.sh('echo ok')));
        assert.deepEqual(
          rs.map((r) => [r.stdout, r.exitCode]),
          sbs.map(() => ['ok\n', 0]),
        );
        assert.ok(sbs.every((sb) => sb.kind === 'bwrap'));
      } finally {
        await Promise.all(sbs.map((sb) => sb.dispose()));
      }
    } finally {
      await rm(m.dir, { recursive: true, force: true });
    }
  });

  it('the gym’s run start installs it before its rollouts, which install nothing', { timeout: 60_000 }, async () => {
    const m = await freshMachine();
    try {
      const detection = await prepareSandbox(m.options());
      assert.equal(detection.kind, 'bwrap');
      assert.equal(await m.runs(), 1);
      const sbs = await Promise.all(Array.from({ length: 4 }, () => createSandbox(m.options())));
      await Promise.all(sbs.map((sb) => sb.dispose()));
      assert.equal(await m.runs(), 1, 'no rollout installed it again');
    } finally {
      await rm(m.dir, { recursive: true, force: true });
    }
  });

  it('two gym processes at once: one installs, the other waits for its lock and installs nothing', { timeout: 90_000 }, async () => {
    const m = await freshMachine();
    const child = (name: string) => {
      const code = [
        `import { writeFileSync } from 'node:fs';`,
        `import { createSandbox } from ${JSON.stringify(join(REPO, 'gym/index.ts'))};`,
        `const logger = { info: (line) => { console.log(line); if (/waiting/.test(line)) writeFileSync(${JSON.stringify(join(m.dir, 'waiter'))}, '${name}'); } };`,
        `const o = { ...${JSON.stringify(m.options([m.script, '--after-waiter']))}, logger };`,
        `const sbs = await Promise.all([1, 2, 3, 4].map(() => createSandbox(o)));`,
        `const rs = await Promise.all(sbs.map((sb) => sb.sh('echo ok')));`,
        `console.log('ran', rs.map((r) => r.stdout.trim()).join(','));`,
        `await Promise.all(sbs.map((sb) => sb.dispose()));`,
      ].join('\n');
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      p.stdout.on('data', (d: Buffer) => void (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => void (out += d.toString()));
      return once(p, 'exit').then(([code]) => ({ code, out }));
    };
    try {
      const [a, b] = await Promise.all([child('a'), child('b')]);
      assert.deepEqual([a.code, b.code], [0, 0], a.out + b.out);
      for (const r of [a, b]) assert.match(r.out, /^ran ok,ok,ok,ok$/m);
      assert.equal(await m.runs(), 1, 'the installer ran once for both processes');
      const installed = [a, b].filter((r) => /bwrap not found: installing bubblewrap with /.test(r.out));
      const waited = [a, b].filter((r) => /another process is installing bubblewrap: waiting/.test(r.out));
      assert.deepEqual([installed.length, waited.length], [1, 1], a.out + b.out);
      assert.notEqual(installed[0], waited[0]);
    } finally {
      await rm(m.dir, { recursive: true, force: true });
    }
  });

  it('an install that fails: every rollout gets one line naming the fix, and the installer ran once', { timeout: 60_000 }, async () => {
    const m = await freshMachine();
    try {
      // the dpkg lock held by something else (another apt) all along
      mkdirSync(join(m.dir, 'installing'));
      writeFileSync(join(m.dir, 'installing', 'pid'), '4242');
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => createSandbox(m.options())));
      assertEachRejected(results, {
        code: 'TS_ERR_PREREQUISITE',
        message: `${m.script} could not install bubblewrap (E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242); install it yourself (sudo apt-get install bubblewrap)`,
      });
      assert.equal(await m.runs(), 1, 'the installer ran once, for all four');
    } finally {
      await rm(m.dir, { recursive: true, force: true });
    }
  });
});

describe('where no sandbox can be made', () => {
  it('bubblewrap missing and not to be installed: a one-line TS_ERR_PREREQUISITE naming the fix', async () => {
    await assert.rejects(
      createSandbox({ kind: 'bwrap', bwrapPath: '/nonexistent/bwrap', install: false }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'TS_ERR_PREREQUISITE');
        assert.match(
          err.message,
          /^no sandbox can be made here, so nothing is run \(bwrap: bwrap not found .*\); install bubblewrap: sudo apt-get install bubblewrap$/,
        );
        return true;
      },
    );
  });

  it('a sandbox that cannot run a command (no system to run it with) is refused, never replaced by a run on the host', async () => {
    const m = marker();
    await assert.rejects(createSandbox({ systemPaths: ['/etc'], install: false }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'TS_ERR_PREREQUISITE');
      assert.match(err.message, /bwrap: .*; unshare: .*/);
      return true;
    });
    assert.equal(processesWith(m).length, 0);
  });

  it('detection reports each way, the user sandboxes run as, and python3 inside', async () => {
    const report = await detectSandbox();
    assert.equal(report.kind, 'bwrap');
    assert.deepEqual(
      report.backends.map((b) => [b.kind, b.available]),
      [
        ['bwrap', true],
        ['unshare', true],
      ],
    );
    if (process.getuid?.() === 0) assert.deepEqual(report.runAs, { uid: 2_000_000_000, gid: 2_000_000_000 });
    else assert.equal(report.runAs, undefined);
    assert.equal(report.python.available, true);
    assert.match(report.python.version ?? '', /^3\.\d+\.\d+$/);
  });
});
