import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyedWorkPool } from '../../../streams/work-pool.ts';
import { waitFor } from '../../support/wait-for.ts';

describe('KeyedWorkPool', () => {
  it('runs tasks of one key in order and different keys concurrently', async () => {
    const pool = new KeyedWorkPool(10);
    const log: string[] = [];
    let concurrent = 0;
    let maxConcurrent = 0;
    // A task runs until the test ends it: the order is the test's, not the clock's.
    const ends = new Map<string, () => void>();
    const task = (name: string) => async () => {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      log.push(`start ${name}`);
      await new Promise<void>((r) => ends.set(name, r));
      log.push(`end ${name}`);
      concurrent--;
    };
    const end = async (name: string) => {
      (await waitFor(`${name} to start`, () => ends.get(name)))();
      await waitFor(`${name} to end`, () => log.includes(`end ${name}`));
    };
    void pool.submit('a', task('a1'));
    void pool.submit('a', task('a2'));
    void pool.submit('b', task('b1'));
    assert.equal(pool.inFlight, 3);
    await waitFor('a1 and b1 to start', () => ends.has('a1') && ends.has('b1'));
    await end('b1');
    assert.ok(!log.includes('start a2'), 'a2 waits for a1');
    await end('a1');
    await end('a2');
    await pool.drain();
    assert.ok(log.indexOf('end a1') < log.indexOf('start a2'), 'a2 waited for a1');
    assert.ok(log.indexOf('start b1') < log.indexOf('end a1'), 'b1 ran beside a1');
    assert.equal(maxConcurrent, 2);
    assert.equal(pool.inFlight, 0);
  });

  it('reports full at its bound and wakes waiters when a slot frees', async () => {
    const pool = new KeyedWorkPool(2);
    void pool.submit('x', () => sleep(20));
    void pool.submit('y', () => sleep(5));
    assert.equal(pool.full, true);
    const t0 = Date.now();
    await pool.whenNotFull();
    assert.ok(Date.now() - t0 >= 3);
    assert.equal(pool.full, false);
    await pool.drain();
  });

  it('a failing task does not block the next task of its key', async () => {
    const pool = new KeyedWorkPool(4);
    const failed = pool.submit('k', async () => {
      throw new Error('boom');
    });
    let ran = false;
    const next = pool.submit('k', async () => {
      ran = true;
    });
    await assert.rejects(failed, /boom/);
    await next;
    assert.equal(ran, true);
  });

  it('a task weighs what it holds: one batch of 100 records fills a pool of 64, and its end frees all of it', async () => {
    const pool = new KeyedWorkPool(64);
    let release!: () => void;
    const batch = pool.submit('p0', () => new Promise<void>((r) => (release = r)), 100);
    assert.equal(pool.inFlight, 100);
    assert.equal(pool.full, true);
    void pool.submit('p1', () => Promise.resolve(), 1);
    assert.equal(pool.inFlight, 101);
    await waitFor('the light task to finish', () => pool.inFlight === 100);
    assert.equal(pool.inFlight, 100, 'the light task ran beside the batch');
    release();
    await batch;
    await pool.drain();
    assert.equal(pool.inFlight, 0);
    assert.equal(pool.full, false);
  });
});
