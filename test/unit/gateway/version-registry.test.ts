/**
 * The version registry both engines serve from, with a fake loader: a new version is swapped in
 * between requests while a request in flight keeps its version, which is disposed only after its
 * last lease; older, repeated and other models' versions are ignored; a failed load is counted and
 * the current version keeps serving; offers made while a load runs end on the newest version.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VersionRegistry } from '../../../gateway/version-registry.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/index.ts';
import type { WeightVersion } from '../../../schemas/index.ts';
import { exampleWeightVersion } from '../../support/fixtures.ts';

class FakeVersion {
  disposals = 0;
  constructor(readonly version: number) {}
  dispose(): void {
    this.disposals++;
  }
}

const wv = (version: number, modelId = 'm'): WeightVersion => exampleWeightVersion({ modelId, version });

/**
 * A registry whose loads wait for `finish(v)` when `gated`, fail for the versions in `bad`, and
 * fail with a passing (retriable) error for the first `missingFor` tries of a version.
 */
function registry(opts: { gated?: boolean; bad?: Set<number>; missingFor?: number; retryDelaysMs?: number[] } = {}) {
  const tries = new Map<number, number>();
  const loads: number[] = [];
  const swaps: number[] = [];
  const errors: string[] = [];
  const loaded = new Map<number, FakeVersion>();
  const gates = new Map<number, () => void>();
  const reg = new VersionRegistry<FakeVersion>({
    modelId: 'm',
    what: 'fake',
    load: async (w) => {
      loads.push(w.version);
      if (opts.gated) await new Promise<void>((resolve) => gates.set(w.version, resolve));
      if (opts.bad?.has(w.version)) throw new Error(`v${w.version} has the wrong sha256`);
      tries.set(w.version, (tries.get(w.version) ?? 0) + 1);
      if (tries.get(w.version)! <= (opts.missingFor ?? 0))
        throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no piece of m v${w.version} yet`, { retriable: true });
      const v = new FakeVersion(w.version);
      loaded.set(w.version, v);
      return v;
    },
    onSwap: (v) => swaps.push(v.version),
    retryDelaysMs: opts.retryDelaysMs ?? [1, 1, 1],
    logger: { info: () => undefined, warn: () => undefined, error: (_o: unknown, msg?: string) => void errors.push(msg ?? '') },
  });
  const finish = (v: number): void => {
    const open = gates.get(v);
    assert.ok(open, `v${v} is being loaded`);
    open();
  };
  return { reg, loads, swaps, errors, loaded, finish, gates };
}

/** Lets pending promise callbacks run (the registry's loads are chained on promises). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('version registry', () => {
  it('serves nothing before the first version', () => {
    const { reg } = registry();
    assert.equal(reg.version, null);
    assert.equal(reg.current, null);
    assert.equal(reg.lease(), null);
  });

  it('swaps a new version in between requests: a request in flight keeps its version, the next one gets the new', async () => {
    const { reg, swaps, loaded } = registry();
    await reg.offer(wv(1));
    const inFlight = reg.lease()!;
    assert.equal(inFlight.value.version, 1);
    await reg.offer(wv(2));
    assert.equal(reg.version, 2);
    assert.equal(inFlight.value.version, 1, 'the request in flight still holds v1');
    const next = reg.lease()!;
    assert.equal(next.value.version, 2);
    assert.deepEqual(swaps, [1, 2]);
    next.release();
    inFlight.release();
    assert.equal(loaded.get(2)!.disposals, 0, 'the current version is never disposed by a release');
  });

  it('disposes a retired version once, after its last lease is released', async () => {
    const { reg, loaded } = registry();
    await reg.offer(wv(1));
    const a = reg.lease()!;
    const b = reg.lease()!;
    await reg.offer(wv(2));
    const v1 = loaded.get(1)!;
    assert.equal(v1.disposals, 0, 'two leases still hold v1');
    a.release();
    a.release(); // a second release of one lease counts once
    assert.equal(v1.disposals, 0, 'one lease still holds v1');
    b.release();
    assert.equal(v1.disposals, 1, 'v1 is disposed with its last lease');
    await reg.offer(wv(3));
    assert.equal(loaded.get(2)!.disposals, 1, 'a version no request holds is disposed at the swap');
    assert.equal(v1.disposals, 1);
  });

  it('ignores older and repeated versions, and other models', async () => {
    const { reg, loads } = registry();
    await reg.offer(wv(3));
    await reg.offer(wv(2));
    await reg.offer(wv(3));
    await reg.offer(wv(9, 'other'));
    assert.deepEqual(loads, [3]);
    assert.equal(reg.version, 3);
  });

  it('counts and logs a failed load, and keeps serving the current version', async () => {
    const { reg, errors, loaded } = registry({ bad: new Set([2]) });
    await reg.offer(wv(1));
    const lease = reg.lease()!;
    await reg.offer(wv(2));
    assert.equal(reg.loadFailures, 1);
    assert.equal(reg.version, 1);
    assert.deepEqual(errors, ['could not load a new fake version; still serving the current one']);
    lease.release();
    assert.equal(loaded.get(1)!.disposals, 0, 'v1 is still served');
    await reg.offer(wv(3));
    assert.equal(reg.version, 3, 'a later good version is loaded as usual');
    assert.equal(reg.loadFailures, 1);
  });

  it('tries a load that failed for a passing reason again (its pieces not yet on Kafka), up to the retry delays', async () => {
    const { reg, loads, swaps } = registry({ missingFor: 2 });
    await reg.offer(wv(1));
    assert.equal(reg.version, 1, 'served on the third try');
    assert.deepEqual(loads, [1, 1, 1]);
    assert.deepEqual(swaps, [1]);
    assert.equal(reg.loadFailures, 2);
    const never = registry({ missingFor: 99, retryDelaysMs: [1, 1] });
    await never.reg.offer(wv(1));
    assert.equal(never.reg.version, null);
    assert.deepEqual(never.loads, [1, 1, 1], 'one try and two more, then it waits for the next version');
    assert.equal(never.errors.length, 3);
  });

  it('stops trying a failed version once a newer one is offered, or the registry closes', async () => {
    const { reg, loads } = registry({ missingFor: 99, retryDelaysMs: [60_000] });
    const first = reg.offer(wv(1));
    await settle();
    // v1 failed once and waits a minute before its next try; close cuts that wait short.
    const t0 = Date.now();
    const closing = reg.close();
    await Promise.all([first, closing]);
    assert.ok(Date.now() - t0 < 5000, 'close cut the wait short');
    assert.deepEqual(loads, [1]);
    const { reg: r2, loads: l2 } = registry({ missingFor: 1, retryDelaysMs: [20] });
    const a = r2.offer(wv(1));
    await settle();
    const b = r2.offer(wv(2));
    await Promise.all([a, b]);
    assert.deepEqual(l2, [1, 2, 2], 'v1 is not tried again once v2 is wanted');
    assert.equal(r2.version, 2);
  });

  it('offers made while a load runs are loaded one at a time, in order, and end on the newest', async () => {
    const { reg, loads, swaps, loaded, finish } = registry({ gated: true });
    const first = reg.offer(wv(1));
    await settle();
    const second = reg.offer(wv(2));
    const third = reg.offer(wv(3));
    const stale = reg.offer(wv(2)); // older than the newest offered: ignored
    await settle();
    assert.deepEqual(loads, [1], 'one load at a time');
    finish(1);
    await first;
    assert.equal(reg.version, 1);
    await settle();
    assert.deepEqual(loads, [1, 2]);
    finish(2);
    await second;
    assert.equal(reg.version, 2, 'served while v3 loads');
    await settle();
    finish(3);
    await third;
    await stale;
    assert.equal(reg.version, 3);
    assert.deepEqual(loads, [1, 2, 3]);
    assert.deepEqual(swaps, [1, 2, 3]);
    assert.deepEqual([loaded.get(1)!.disposals, loaded.get(2)!.disposals, loaded.get(3)!.disposals], [1, 1, 0]);
  });

  it('close waits for a load in progress, then disposes the current version after its last lease', async () => {
    const { reg, loaded, finish } = registry({ gated: true });
    const first = reg.offer(wv(1));
    await settle();
    finish(1);
    await first;
    const lease = reg.lease()!;
    void reg.offer(wv(2));
    await settle();
    const closed = reg.close();
    finish(2);
    await closed;
    assert.equal(reg.version, null);
    assert.equal(reg.lease(), null);
    assert.equal(loaded.get(2)!.disposals, 1, 'the version loaded meanwhile is disposed at close');
    assert.equal(loaded.get(1)!.disposals, 0, 'a request still holds v1');
    lease.release();
    assert.equal(loaded.get(1)!.disposals, 1);
  });
});
