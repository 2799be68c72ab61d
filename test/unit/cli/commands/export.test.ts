import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import {
  AdapterStore,
  llamaConfigOf,
  LoraAdapter,
  openGguf,
  readLoraAdapter,
  selectBackend,
  writeLoraAdapter,
  writeTinyModel,
  type TinyModel,
} from '../../../../policy/index.ts';
import { llamaLogProbs, logProbDistance } from '../../../support/llama-logprobs.ts';

const BIN = new URL('../../../../bin/turnstream.js', import.meta.url).pathname;

describe('turnstream export', () => {
  let dir = '';
  let tiny: TinyModel;
  before(async () => {
    await selectBackend('wasm');
    dir = await mkdtemp(join(tmpdir(), 'ts-export-'));
    tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { seed: 4 });
    const file = await openGguf(tiny.path);
    const lora = LoraAdapter.init(llamaConfigOf(file), { rank: 2, alpha: 4 }, 1);
    await file.close();
    for (const v of lora.variables) v.assign(tf.randomNormal(v.shape, 0, 0.5, 'float32', 2));
    const pairs = await lora.toPairs();
    const store = new AdapterStore(join(dir, 'weights'));
    await store.ensureBase('tiny', { name: tiny.path, sha256: tiny.sha256 });
    await store.write(
      { modelId: 'tiny', version: 1, parentVersion: 0, base: { name: tiny.path, sha256: tiny.sha256 }, lora: lora.config },
      (p) => writeLoraAdapter(p, { architecture: 'llama', alpha: 4, pairs }).then(() => undefined),
    );
    lora.dispose();
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, [BIN, 'export', ...args], {
      cwd: dir,
      env: { ...process.env, TURNSTREAM_HOME: dir, TURNSTREAM_MODEL: tiny.path, TURNSTREAM_MODEL_ID: 'tiny', LOG_LEVEL: 'silent' },
    });

  it('writes the adapter of a version, and the merged model that llama.cpp reads as base + adapter', async () => {
    const a = JSON.parse((await run(['--version', '1', '--json'])).stdout) as { path: string; kind: string };
    assert.equal(a.kind, 'adapter');
    assert.deepEqual(await readFile(a.path), await readFile(join(dir, 'weights', 'tiny', 'v1', 'adapter.gguf')));
    const file = await openGguf(a.path);
    assert.equal((await readLoraAdapter(file)).rank, 2);
    await file.close();
    const m = JSON.parse((await run(['--version', '1', '--merged', '--type', 'F32', '--json'])).stdout) as { path: string };
    const ids = [tiny.special.imStart, 40, 50, 60, 70, 80, tiny.special.imEnd];
    const merged = await llamaLogProbs(m.path, ids);
    const adapted = await llamaLogProbs(tiny.path, ids, { adapters: [{ filePath: a.path }] });
    assert.ok(logProbDistance(merged, adapted).max < 0.01, JSON.stringify(logProbDistance(merged, adapted)));
  });

  it('bad input is one line and exit 2: version 0 has no adapter, an unknown version does not exist', async () => {
    for (const [args, re] of [
      [['--version', '0'], /version 0 is the base itself/],
      [['--version', '9'], /no version 9/],
      [['--version', 'x'], /--version must be a whole number/],
    ] as const) {
      await assert.rejects(run([...args, '--json']), (err: Error & { code?: number; stderr?: string }) => {
        assert.match(err.stderr ?? '', re);
        assert.equal((err.stderr ?? '').trim().split('\n').length, 1, err.stderr);
        return true;
      });
    }
  });
});
