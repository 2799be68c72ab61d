import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Supervisor } from '../../../cli/supervisor.ts';

// A stand-in `turnstream` whose sub-commands are: `live` (runs until SIGTERM) and `crash` (exits 3).
const dir = mkdtempSync(join(tmpdir(), 'supervisor-'));
const bin = join(dir, 'fake-turnstream.mjs');
writeFileSync(
  bin,
  `const [cmd] = process.argv.slice(2);
   console.log('started ' + cmd);
   if (cmd === 'crash') process.exit(3);
   process.on('SIGTERM', () => { console.log('bye'); process.exit(0); });
   setInterval(() => {}, 1000);`,
);

describe('Supervisor', () => {
  it('runs services, restarts one that crashes, gives up after too many crashes, and stops all', async () => {
    const changes: string[] = [];
    const sup = new Supervisor({
      bin,
      logDir: join(dir, 'logs'),
      env: process.env,
      maxCrashes: 3,
      settleMs: 1000,
      onChange: (n, s) => changes.push(`${n}:${s}`),
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
    assert.equal(ready, false, 'one service failed');
    assert.deepEqual(states, { live: 'ready', crashy: 'failed' });
    assert.equal(changes.filter((c) => c === 'crashy:restarting').length, 2, 'restarted twice, then left down');
    await sup.stopAll();
    await sleep(100);
    assert.deepEqual(
      sup.states().map((s) => s.state),
      ['stopped', 'stopped'],
    );
    const log = readFileSync(join(dir, 'logs', 'live.log'), 'utf8');
    assert.match(log, /started live/);
    assert.match(log, /bye/, 'the live service got SIGTERM and exited cleanly');
    assert.equal(readFileSync(join(dir, 'logs', 'crashy.log'), 'utf8').match(/started crash/g)?.length, 3);
  });
});
