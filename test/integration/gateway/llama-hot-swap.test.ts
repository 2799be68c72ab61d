/**
 * The llama.cpp engine on a tiny GGUF the test writes: a LoRA version written by the trainer's
 * adapter code is swapped in while clients keep requesting (streamed and not) — no request
 * fails, requests after the swap answer from the new version, `name@0` still serves the base, a
 * version trained on another base or with a wrong sha256 is refused while the current one keeps
 * serving, and a retired version's adapter is freed (node-llama-cpp keeps each one it loads).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import type { Gateway } from '../../../gateway/index.ts';
import { llamaConfigOf, LoraAdapter, openGguf, selectBackend, type TinyModel } from '../../../policy/index.ts';
import type { WeightVersion } from '../../../schemas/index.ts';
import { startTinyLlamaGateway } from '../../support/llama-gateway.ts';
import { storeLoraVersion } from '../../support/lora-version.ts';
import { waitFor } from '../../support/wait-for.ts';

let dir = '';
let tiny: TinyModel;
let gw: Gateway;
let url = '';
const base = () => ({ name: 'tiny', sha256: tiny.sha256 });

before(async () => {
  await selectBackend('wasm');
  dir = await mkdtemp(join(tmpdir(), 'llama-swap-'));
  ({ tiny, gw, url } = await startTinyLlamaGateway(dir, { architecture: 'llama', seed: 7 }, { contextSize: 256, parallel: 2 }));
});
after(async () => {
  await gw?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Writes version `v` (a random adapter) and the WeightVersion announcing it. */
async function publish(v: number, seed: number, baseOverride?: { name: string; sha256: string }): Promise<WeightVersion> {
  const file = await openGguf(tiny.path);
  const config = llamaConfigOf(file);
  await file.close();
  const lora = LoraAdapter.init(config, { rank: 4, alpha: 8 }, seed);
  for (const x of lora.variables) x.assign(tf.randomNormal(x.shape, 0, 0.6, 'float32', seed));
  const pairs = await lora.toPairs();
  const { wv } = await storeLoraVersion(
    join(dir, 'weights'),
    { modelId: 'tiny', version: v, base: baseOverride ?? base(), lora: lora.config },
    pairs,
  );
  lora.dispose();
  return wv;
}

async function ask(i: number, model = 'tiny', stream = false): Promise<{ status: number; version: string | null; text: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, temperature: 0, max_tokens: 12, messages: [{ role: 'user', content: `hello ${i % 3}` }] }),
  });
  const text = await res.text();
  return { status: res.status, version: res.headers.get('x-policy-version'), text };
}

test(
  'a LoRA version swaps in under concurrent load with no failed request; name@0 still serves the base',
  { timeout: 180_000 },
  async () => {
    const baseAnswer = (await ask(0)).text;
    const wv = await publish(1, 1);
    let running = true;
    const results: Array<{ status: number; version: string | null }> = [];
    const clients = [0, 1, 2, 3].map(async (c) => {
      for (let i = 0; running; i++) results.push(await ask(i, 'tiny', (i + c) % 2 === 0));
    });
    const t0 = Date.now();
    await gw.llama!.offer(wv);
    const swapMs = Date.now() - t0;
    assert.equal(gw.llama!.version, 1);
    // Keep the load on a little after the swap.
    const after = results.length;
    await waitFor('8 more requests after the swap', () => results.length >= after + 8, { timeoutMs: 120_000, intervalMs: 20 });
    running = false;
    await Promise.all(clients);
    assert.ok(results.length > 8, `requests served under load: ${results.length}`);
    assert.deepEqual(
      results.filter((r) => r.status !== 200),
      [],
      'no request failed',
    );
    assert.ok(swapMs < 30_000, `swap took ${swapMs} ms`);
    const now = await ask(0);
    assert.equal(now.version, '1');
    assert.notEqual(
      JSON.parse(now.text).choices[0].message.content,
      JSON.parse(baseAnswer).choices[0].message.content,
      'the adapter changes the answer',
    );
    const pinned = await ask(0, 'tiny@0');
    assert.equal(pinned.version, '0');
    assert.equal(
      JSON.parse(pinned.text).choices[0].message.content,
      JSON.parse(baseAnswer).choices[0].message.content,
      'tiny@0 is the base',
    );
    const models = ((await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
    assert.deepEqual(models, ['tiny', 'tiny@0', 'tiny@1']);
    const unknown = await ask(0, 'tiny@7');
    assert.equal(unknown.status, 404);
  },
);

test('a version of another base, or with a wrong sha256, is refused; the current version keeps serving', async () => {
  const other = await publish(2, 2, { name: 'other', sha256: 'f'.repeat(64) });
  await gw.llama!.offer(other);
  assert.equal(gw.llama!.version, 1);
  const wrongSha = await publish(3, 3);
  await gw.llama!.offer({ ...wrongSha, sha256: '0'.repeat(64) });
  assert.equal(gw.llama!.version, 1);
  assert.equal((await ask(1)).status, 200);
  assert.equal(gw.llama!.versions!.loadFailures, 2);
});

test("a retired version's adapter is freed with its contexts: node-llama-cpp holds only the served ones", async () => {
  const versions = gw.llama!.versions!;
  for (let v = 4; v <= 8; v++) {
    await gw.llama!.offer(await publish(v, v));
    assert.equal(gw.llama!.version, v);
    assert.equal((await ask(v)).status, 200);
  }
  // v8 is current; tiny@0 (pinned above) is the base and has no adapter; 1 and 4–7 are retired.
  await waitFor('the retired adapters to be freed', () => versions.adapters.loaded === 1, { timeoutMs: 30_000, intervalMs: 20 });
  assert.equal((await ask(9, 'tiny@1')).status, 200, 'a retired version pinned by name loads again');
  await waitFor('its adapter loaded beside the current one', () => versions.adapters.loaded === 2, { timeoutMs: 30_000, intervalMs: 20 });
});
