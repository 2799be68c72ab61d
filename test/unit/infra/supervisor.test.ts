import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Supervisor } from '../../../infra/supervisor.ts';
import { waitFor } from '../../support/wait-for.ts';

// A stand-in `turnstream` whose sub-commands are: `live` (runs until SIGTERM), `crash` (exits 3),
// `flaky <file>` (exits 3 until the file exists, then runs: a service whose dependency returns)
// and `chatty <n>` (prints n numbered 100-byte lines, then runs until SIGTERM).
const dir = mkdtempSync(join(tmpdir(), 'supervisor-'));
const bin = join(dir, 'fake-turnstream.cjs');
writeFileSync(
  bin.replace(/\.mjs$/, '.cjs'),
  `const [cmd] = process.argv.slice(2);
   console.log('started ' + cmd);
   if (cmd === 'env') console.log('home=' + process.env.TS_FAKE_HOME);
   if (cmd === 'crash') process.exit(3);
   if (cmd === 'flaky' && !require('node:fs').existsSync(process.argv[3])) process.exit(3);
   if (cmd === 'chatty') for (let i = 0; i < Number(process.argv[3]); i++) console.log(('line ' + i + ' ').padEnd(99, 'x'));
   process.on('SIGTERM', () => { console.log('bye'); process.exit(0); });
   setInterval(() => {}, 1000);`,
);

describe('Supervisor', () => {
  it('runs services, restarts one that crashes with a growing wait, reports a crash loop without giving up, and stops all', async () => {
    const changes: string[] = [];
    const details: string[] = [];
    const sup = new Supervisor({
      bin,
      logDir: join(dir, 'logs'),
      env: process.env,
      maxCrashes: 3,
      settleMs: 1000,
      restartDelayMs: 200,
      maxRestartDelayMs: 800,
      onChange: (n, s, d) => {
        changes.push(`${n}:${s}`);
        if (n === 'crashy' && d) details.push(d);
      },
    });
    sup.start({ name: 'live', args: ['live'] });
    sup.start({ name: 'crashy', args: ['crash'] });
    let ready: boolean;
    let states: Record<string, string>;
    try {
      ready = await sup.waitReady(15000);
      states = Object.fromEntries(sup.states().map((s) => [s.name, s.state]));
    } catch (err) {
      await sup.stopAll();
      throw err;
    }
    assert.equal(ready, false, 'one service crash-loops');
    assert.deepEqual(states, { live: 'ready', crashy: 'crash-looping' });
    assert.equal(changes.filter((c) => c === 'crashy:restarting').length, 2, 'restarting, then reported as a crash loop');
    // It is not given up on: more starts follow.
    const starts = () => readFileSync(join(dir, 'logs', 'crashy.log'), 'utf8').match(/started crash/g)?.length ?? 0;
    const seen = starts();
    await waitFor(
      'another start after the crash loop was reported, and four waits announced',
      () => starts() > seen && details.length >= 4,
      {
        timeoutMs: 15_000,
      },
    );
    assert.ok(starts() > seen, 'still restarted after the crash loop was reported');
    assert.deepEqual(
      details.slice(0, 4).map((d) => /next start in ([\d.]+) s/.exec(d)?.[1]),
      ['0.2', '0.4', '0.8', '0.8'],
      'the wait doubles up to its cap',
    );
    await sup.stopAll();
    await waitFor('both services to be stopped', () => sup.states().every((s) => s.state === 'stopped'));
    assert.deepEqual(
      sup.states().map((s) => s.state),
      ['stopped', 'stopped'],
    );
    const log = readFileSync(join(dir, 'logs', 'live.log'), 'utf8');
    assert.match(log, /started live/);
    assert.match(log, /bye/, 'the live service got SIGTERM and exited cleanly');
  });

  it('a service that crashed while its dependency was away comes back when the dependency does', async () => {
    const flag = join(dir, 'dependency-is-back');
    const sup = new Supervisor({
      bin,
      logDir: join(dir, 'logs2'),
      env: process.env,
      maxCrashes: 2,
      settleMs: 500,
      restartDelayMs: 100,
      maxRestartDelayMs: 300,
    });
    sup.start({ name: 'flaky', args: ['flaky', flag] });
    try {
      assert.equal(await sup.waitReady(3000), false);
      // Between two crashes it is briefly running again: wait for the loop to be named as such.
      await waitFor('flaky to be reported as crash-looping', () => sup.states()[0].state === 'crash-looping', { timeoutMs: 15_000 });
      writeFileSync(flag, 'yes');
      await waitFor(
        'flaky to be ready once its dependency is back',
        async () => {
          if (sup.states()[0].state !== 'ready') await sup.waitReady(500);
          return sup.states()[0].state === 'ready';
        },
        {
          timeoutMs: 10_000,
          intervalMs: 100,
        },
      );
    } finally {
      await sup.stopAll();
    }
  });

  it('rotates a service log past its size limit and keeps the newest files (logMaxBytes, logKeep)', async () => {
    const logDir = join(dir, 'logs3');
    const sup = new Supervisor({ bin, logDir, env: process.env, settleMs: 200, logMaxBytes: 10_000, logKeep: 2 });
    // 2,000 lines of 100 bytes: 200 kB through a limit of 10 kB.
    sup.start({ name: 'chatty', args: ['chatty', '2000'] });
    const lastLine = 'line 1999 '.padEnd(99, 'x');
    // The write that crosses the limit rotates the file, so the last line may be in `.1`.
    const logged = (): string =>
      readdirSync(logDir)
        .map((f) => readFileSync(join(logDir, f), 'utf8'))
        .join('');
    try {
      await waitFor('the last line logged', () => logged().includes(lastLine));
    } finally {
      await sup.stopAll();
    }
    assert.deepEqual(readdirSync(logDir).sort(), ['chatty.log', 'chatty.log.1', 'chatty.log.2'], 'the log and the two newest rotated ones');
    for (const f of ['chatty.log.1', 'chatty.log.2']) {
      const size = statSync(join(logDir, f)).size;
      // A write is never split between two files: a rotated file is the limit plus at most one pipe chunk (64 KiB).
      assert.ok(size >= 10_000 && size < 10_000 + 65_536, `${f}: ${size} bytes`);
    }
    // Oldest to newest, the kept files hold consecutive lines ending with the last one: nothing
    // lost or repeated inside the rotation, only the files beyond the second dropped.
    const kept = ['chatty.log.2', 'chatty.log.1', 'chatty.log'].map((f) => readFileSync(join(logDir, f), 'utf8')).join('');
    const numbers = [...kept.matchAll(/^line (\d+) /gm)].map((m) => Number(m[1]));
    assert.ok(numbers[0] > 0, 'the first lines were rotated out');
    assert.deepEqual(
      numbers,
      Array.from({ length: numbers.length }, (_, i) => numbers[0] + i),
    );
    assert.equal(numbers.at(-1), 1999);
  });

  it('stops one service without restarting it, starts it again by name, and gives a service variables of its own', async () => {
    const changes: string[] = [];
    const sup = new Supervisor({
      bin,
      logDir: join(dir, 'logs-stop-one'),
      env: { ...process.env, TS_FAKE_HOME: 'shared' },
      settleMs: 300,
      onChange: (n, s) => changes.push(`${n}:${s}`),
    });
    sup.start({ name: 'a', args: ['env'], env: { TS_FAKE_HOME: 'home-a' } });
    sup.start({ name: 'b', args: ['env'] });
    assert.ok(await sup.waitReady(10_000));
    const pidA = sup.states().find((s) => s.name === 'a')!.pid!;
    await sup.stop('a');
    assert.throws(() => process.kill(pidA, 0), 'a exited');
    assert.deepEqual(
      sup.states().map((s) => s.name),
      ['b'],
      'a is no longer supervised',
    );
    assert.ok(changes.includes('a:stopped') && !changes.includes('a:restarting'), changes.join(' '));
    await assert.rejects(sup.stop('nobody'), /no service named nobody/);
    sup.start({ name: 'a', args: ['env'], env: { TS_FAKE_HOME: 'home-a2' } });
    assert.ok(await sup.waitReady(10_000));
    assert.notEqual(sup.states().find((s) => s.name === 'a')!.pid, pidA);
    await sup.stopAll();
    const log = (n: string) => readFileSync(join(dir, 'logs-stop-one', `${n}.log`), 'utf8');
    assert.match(log('a'), /home=home-a\n[^]*bye[^]*home=home-a2/);
    assert.match(log('b'), /home=shared/);
  });

  it('refuses a log size or count below 1', () => {
    const sup = new Supervisor({ bin, logDir: join(dir, 'logs4'), env: process.env, logKeep: 0 });
    assert.throws(() => sup.start({ name: 'live', args: ['live'] }), /logKeep must be an integer >= 1 \(got 0\)/);
  });
});
