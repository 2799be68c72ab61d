/**
 * sha256 of local files, computed once per file version: a cache in the models folder keyed by
 * absolute path, remembered with the file's size and mtime (a rewritten file is hashed again).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';

interface Entry {
  size: number;
  mtimeMs: number;
  sha256: string;
}

const CACHE_FILE = 'sha256-cache.json';

/** sha256 of a file, hex, by streaming it. */
export async function sha256File(path: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash, { signal });
  return hash.digest('hex');
}

async function readCache(cacheDir: string): Promise<Record<string, Entry>> {
  try {
    return JSON.parse(await readFile(join(cacheDir, CACHE_FILE), 'utf8')) as Record<string, Entry>;
  } catch {
    return {}; // missing or unreadable: every hash is recomputed, nothing is lost
  }
}

/** Records a file's hash (e.g. one verified while downloading). Concurrent writers: the last one wins, entries lost are recomputed. */
export async function rememberSha256(cacheDir: string, path: string, sha256: string): Promise<void> {
  const abs = resolve(path);
  const { size, mtimeMs } = await stat(abs);
  await mkdir(cacheDir, { recursive: true });
  const cache = await readCache(cacheDir);
  cache[abs] = { size, mtimeMs, sha256 };
  const tmp = join(cacheDir, `${CACHE_FILE}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, JSON.stringify(cache, null, 1));
    await rename(tmp, join(cacheDir, CACHE_FILE));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** The remembered hash of the file as it is now, if any. */
export async function knownSha256(cacheDir: string, path: string): Promise<string | undefined> {
  const abs = resolve(path);
  const entry = (await readCache(cacheDir))[abs];
  if (!entry) return undefined;
  const { size, mtimeMs } = await stat(abs);
  return entry.size === size && entry.mtimeMs === mtimeMs ? entry.sha256 : undefined;
}

/** The file's sha256, from the cache when its size and mtime are unchanged, else computed and remembered. */
export async function cachedSha256(cacheDir: string, path: string, signal?: AbortSignal): Promise<string> {
  const known = await knownSha256(cacheDir, path);
  if (known) return known;
  const sha256 = await sha256File(path, signal);
  await rememberSha256(cacheDir, path, sha256);
  return sha256;
}
