import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { initCheckpoint, loadPolicy, type GeneratedToken, type PolicyHandle } from '../../../../policy/index.ts';
import { TINY, close } from '../../../support/tfjs-helpers.ts';

let weightsDir = '';
let sha = '';
before(async () => {
  weightsDir = await mkdtemp(join(tmpdir(), 'turnstream-policy-'));
  sha = (await initCheckpoint(weightsDir, { seed: 2, config: TINY })).sha256;
});
after(() => rm(weightsDir, { recursive: true, force: true }));

async function collect(p: PolicyHandle, ids: number[], seed: number): Promise<GeneratedToken[]> {
  const out: GeneratedToken[] = [];
  for await (const t of p.generate(ids, { maxTokens: 12, seed })) out.push(t);
  return out;
}

test('loadPolicy loads the latest version and serves render → generate → score', async () => {
  const p = await loadPolicy({ weightsDir, expectedSha256: sha });
  assert.equal(p.modelId, 'turnstream-tiny');
  assert.equal(p.version, 0);
  assert.equal(p.sha256, sha);
  assert.equal(p.config.contextLength, TINY.contextLength);
  const { ids, truncatedTokens } = p.renderPrompt([{ role: 'user', content: 'x'.repeat(100) }]);
  assert.ok(ids.length <= (TINY.contextLength * 3) / 4);
  assert.ok(truncatedTokens > 0);
  const out = await collect(p, ids, 1);
  const scored = await p.score(
    ids,
    out.map((t) => t.id),
  );
  scored.forEach((s, i) => close(s, out[i].logprob, 1e-4));
  p.dispose();
});

test('missing model or version is NOT_FOUND; wrong sha256 is CORRUPT_WEIGHTS', async () => {
  await assert.rejects(loadPolicy({ weightsDir, modelId: 'other' }), { code: 'TS_ERR_NOT_FOUND' });
  await assert.rejects(loadPolicy({ weightsDir, version: 7 }), { code: 'TS_ERR_NOT_FOUND' });
  await assert.rejects(loadPolicy({ weightsDir, expectedSha256: 'f'.repeat(64) }), { code: 'TS_ERR_CORRUPT_WEIGHTS' });
});

test('concurrent generations both complete, and dispose waits for in-flight ones', async () => {
  const p = await loadPolicy({ weightsDir });
  const ids = p.renderPrompt([{ role: 'user', content: 'hi' }]).ids;
  const solo = await collect(p, ids, 9);
  const tensorsBefore = tf.memory().numTensors;
  const g1 = collect(p, ids, 9);
  const g2 = collect(p, ids, 10);
  await new Promise((r) => setImmediate(r));
  p.dispose(); // a hot swap: in-flight requests finish on this version
  const [a, b] = await Promise.all([g1, g2]);
  assert.deepEqual(a, solo);
  assert.ok(b.length > 0);
  assert.ok(tf.memory().numTensors < tensorsBefore, 'weights freed after the last generation');
  await assert.rejects(collect(p, ids, 1), { code: 'TS_ERR_INTERNAL' });
});
