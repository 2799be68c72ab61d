/**
 * Native TensorFlow as a service gets it: built from PyPI's wheel on first use (CI's first test
 * builds it into the shared cache), checked against known results, and when it cannot be had —
 * the npm package removed, a wheel whose sha256 is wrong, a GPU build that fails — one warning
 * line with the reason and a working fallback.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NATIVE_DISTS, type BackendStatus, type NativeTensorflowOptions } from '../../../policy/index.ts';
import { startFileServer, type FileServer } from '../../support/file-server.ts';

const CHILD = fileURLToPath(new URL('../../support/select-backend-child.ts', import.meta.url));

/** Selects in a child process; asynchronously, since the file server answers from this one. */
async function select(options: {
  preferred?: string;
  native?: NativeTensorflowOptions;
}): Promise<{ status: BackendStatus; warnings: string[] }> {
  const p = await promisify(execFile)(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(options)], { timeout: 600_000 });
  return { status: JSON.parse(p.stdout.trim().split('\n').pop()!) as BackendStatus, warnings: p.stderr.trim().split('\n').filter(Boolean) };
}

let server: FileServer;
let tmp = '';
before(async () => {
  server = await startFileServer();
  tmp = await mkdtemp(join(tmpdir(), 'native-tf-'));
});
after(async () => {
  await server.close();
  await rm(tmp, { recursive: true, force: true });
});

test('with nothing asked, the backend is native TensorFlow, built or cached, and checked', { timeout: 600_000 }, async () => {
  const { status, warnings } = await select({});
  assert.equal(status.backend, 'tensorflow');
  assert.equal(status.native?.variant, 'cpu');
  assert.equal(status.native?.gpuInUse, false);
  assert.match(status.check, /largest relative error/);
  assert.match(status.reason, /native TensorFlow on the CPU/);
  assert.equal(status.fallback, undefined);
  assert.deepEqual(warnings, []);
});

test('without the npm package: one line naming it and the fix, and training runs on wasm', async () => {
  const dists = { ...NATIVE_DISTS, cpu: { ...NATIVE_DISTS.cpu, npmPackage: '@tensorflow/tfjs-node-removed' } };
  const { status, warnings } = await select({ native: { dir: tmp, dists } });
  assert.equal(status.backend, 'wasm');
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(
    warnings[0],
    /tfjs runs on wasm, not native TensorFlow: tensorflow: @tensorflow\/tfjs-node-removed is not installed.*npm install --include=optional/,
  );
});

test('a wheel whose sha256 is wrong is refused with one line, and training runs on wasm', async () => {
  const body = Buffer.from('not the TensorFlow wheel');
  server.routes.set('/tensorflow_cpu-2.16.1-cp311-cp311-manylinux_2_17_x86_64.whl', { body });
  const tensorflow = {
    ...NATIVE_DISTS.cpu.tensorflow,
    url: `${server.url}/tensorflow_cpu-2.16.1-cp311-cp311-manylinux_2_17_x86_64.whl`,
    bytes: body.length,
  };
  const dists = { ...NATIVE_DISTS, cpu: { ...NATIVE_DISTS.cpu, tensorflow } };
  const { status, warnings } = await select({ native: { dir: tmp, dists } });
  assert.equal(status.backend, 'wasm');
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0], /tfjs runs on wasm.*sha256/);
  assert.match(status.fallback ?? '', /sha256/);
});

test('with install off and no build in the cache, the same: one line and wasm', async () => {
  const { status, warnings } = await select({ native: { dir: join(tmp, 'empty'), install: false } });
  assert.equal(status.backend, 'wasm');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /no cpu build in .*empty \(install is off\)/);
});

test('a CUDA device whose GPU build cannot be had falls back to the CPU build, saying why', { timeout: 600_000 }, async () => {
  const gpu = { ...NATIVE_DISTS.gpu, tensorflow: { ...NATIVE_DISTS.gpu.tensorflow, url: `${server.url}/missing.whl` } };
  const { status, warnings } = await select({
    native: { dists: { ...NATIVE_DISTS, gpu }, cudaDevice: { present: true, detail: 'a test device' } },
  });
  assert.equal(status.backend, 'tensorflow');
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0], /tensorflow-gpu: .*not found/);
  assert.match(status.reason, /the GPU build was not had/);
});

test(
  'the GPU build on a machine without a GPU: it builds from the CUDA wheel, loads, computes right, and says it sees no GPU',
  { timeout: 900_000 },
  async () => {
    // The NVIDIA libraries are left out (gigabytes, and no device to use them here): TensorFlow
    // loads them lazily and, without them, runs on the CPU.
    const gpu = { ...NATIVE_DISTS.gpu, cuda: [] };
    const { status, warnings } = await select({
      native: { dists: { ...NATIVE_DISTS, gpu }, cudaDevice: { present: true, detail: 'a test device' } },
    });
    assert.equal(status.backend, 'tensorflow-gpu');
    assert.equal(status.native?.variant, 'gpu');
    assert.equal(status.native?.gpuInUse, false);
    assert.match(status.check, /largest relative error/);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0], /the GPU build loaded but TensorFlow sees no GPU/);
  },
);
