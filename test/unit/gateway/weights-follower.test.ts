/**
 * The gateway's weights follower: the newest version of the served model is made local, then
 * offered; a burst fetches only its newest; a failed fetch is counted and logged and the next
 * version is fetched as usual; other models' versions are only remembered.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WeightsFollower } from '../../../gateway/weights-follower.ts';
import type { WeightTransport } from '../../../policy/index.ts';
import type { WeightVersion } from '../../../schemas/index.ts';
import { exampleWeightVersion } from '../../support/fixtures.ts';

/** A transport that records what it was asked and refuses the versions in `bad`. */
function fakeTransport(bad: Set<number> = new Set()) {
  const localized: number[] = [];
  const remembered: string[] = [];
  const transport = {
    remember: (wv: WeightVersion) => remembered.push(`${wv.modelId}@${wv.version}`),
    localize: async (wv: WeightVersion) => {
      localized.push(wv.version);
      if (bad.has(wv.version)) throw new Error(`piece 2 of m v${wv.version} has sha256 00, its record says 11`);
      return 'fetched';
    },
  } as unknown as WeightTransport;
  return { transport, localized, remembered };
}

function follower(t: WeightTransport, errors: string[] = []) {
  let current: number | null = 0;
  const offered: number[] = [];
  const f = new WeightsFollower({
    modelId: 'm',
    transport: t,
    current: () => current,
    offer: async (wv) => {
      offered.push(wv.version);
      current = wv.version;
    },
    logger: { info: () => undefined, warn: () => undefined, error: (_o: unknown, msg?: string) => void errors.push(msg ?? '') },
  });
  return { f, offered };
}

const wv = (version: number, modelId = 'm'): WeightVersion =>
  exampleWeightVersion({ modelId, version, uri: `kafka://turnstream.weight-blobs.v1/${modelId}/${version}` });

describe('weights follower', () => {
  it('a burst (a gateway catching up) fetches and offers only the newest version', async () => {
    const { transport, localized, remembered } = fakeTransport();
    const { f, offered } = follower(transport);
    for (const v of [1, 2, 3, 4, 5]) f.onVersion(wv(v));
    f.onVersion(wv(9, 'other'));
    await f.idle();
    assert.deepEqual(localized, [5]);
    assert.deepEqual(offered, [5]);
    assert.deepEqual(remembered, ['m@1', 'm@2', 'm@3', 'm@4', 'm@5', 'other@9'], 'every version is remembered, for pinned requests');
  });

  it('versions arriving one by one are each fetched, in order; old and repeated ones are ignored', async () => {
    const { transport, localized } = fakeTransport();
    const { f, offered } = follower(transport);
    for (const v of [1, 2, 2, 1, 3]) {
      f.onVersion(wv(v));
      await f.idle();
    }
    assert.deepEqual(localized, [1, 2, 3]);
    assert.deepEqual(offered, [1, 2, 3]);
  });

  it('a version whose fetch fails is not offered: counted, logged with its reason, and the next one is fetched', async () => {
    const errors: string[] = [];
    const { transport, localized } = fakeTransport(new Set([2]));
    const { f, offered } = follower(transport, errors);
    f.onVersion(wv(1));
    await f.idle();
    f.onVersion(wv(2));
    await f.idle();
    assert.deepEqual(offered, [1]);
    assert.equal(f.fetchFailures, 1);
    assert.match(errors[0], /could not fetch m v2: piece 2 of m v2 has sha256 00, its record says 11; still serving the current version/);
    f.onVersion(wv(2)); // seen again (a rebalance): not fetched again
    f.onVersion(wv(3));
    await f.idle();
    assert.deepEqual(localized, [1, 2, 3]);
    assert.deepEqual(offered, [1, 3]);
  });
});
