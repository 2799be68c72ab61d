/**
 * Extracting one member of a zip (a Python wheel) with yauzl, streaming: the member is inflated
 * straight into `<dest>.part`, hashed on the way, checked, and renamed into place.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';

/** Options of {@link extractZipMember}. */
export interface ExtractZipMemberOptions {
  /** sha256 the member must have, hex. @default undefined = not checked */
  expectedSha256?: string;
  /** Called as the member is inflated. @default undefined */
  onProgress?: (p: { extractedBytes: number; totalBytes: number }) => void;
  /** Cancels the extraction (TS_ERR_ABORTED). @default undefined */
  signal?: AbortSignal;
}

const openZip = (path: string): Promise<ZipFile> =>
  new Promise((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: false }, (err, zip) => (err ? reject(err) : resolve(zip))),
  );

function findEntry(zip: ZipFile, name: string): Promise<Entry | undefined> {
  return new Promise((resolve, reject) => {
    zip.on('entry', (entry: Entry) => (entry.fileName === name ? resolve(entry) : zip.readEntry()));
    zip.on('end', () => resolve(undefined));
    zip.on('error', reject);
    zip.readEntry();
  });
}

/**
 * Writes the zip member `member` of `zipPath` to `dest` and returns its sha256 and size.
 * @throws TurnstreamError TS_ERR_CORRUPT_WEIGHTS for a damaged zip or a checksum mismatch;
 *   TS_ERR_NOT_FOUND when the zip has no such member
 */
export async function extractZipMember(
  zipPath: string,
  member: string,
  dest: string,
  options: ExtractZipMemberOptions = {},
): Promise<{ sha256: string; bytes: number }> {
  let zip: ZipFile;
  try {
    zip = await openZip(zipPath);
  } catch (err) {
    throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${zipPath} is not a readable zip: ${(err as Error).message}`, { cause: err });
  }
  const part = `${dest}.part`;
  try {
    const entry = await findEntry(zip, member);
    if (!entry) throw new TurnstreamError(ErrorCodes.NOT_FOUND, `${zipPath} has no member ${member}`);
    const hash = createHash('sha256');
    let extracted = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        extracted += chunk.length;
        options.onProgress?.({ extractedBytes: extracted, totalBytes: entry.uncompressedSize });
        callback(null, chunk);
      },
    });
    try {
      const stream = await zip.openReadStreamPromise(entry);
      await pipeline(stream, meter, createWriteStream(part), { signal: options.signal });
    } catch (err) {
      await rm(part, { force: true });
      if (options.signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, `extraction of ${member} cancelled`, { cause: err });
      throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${zipPath}: cannot extract ${member}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const sha256 = hash.digest('hex');
    if (options.expectedSha256 && sha256 !== options.expectedSha256.toLowerCase()) {
      await rm(part, { force: true });
      throw new TurnstreamError(
        ErrorCodes.CORRUPT_WEIGHTS,
        `${zipPath}: ${member} has sha256 ${sha256}, expected ${options.expectedSha256}`,
      );
    }
    await rename(part, dest);
    return { sha256, bytes: extracted };
  } finally {
    zip.close();
  }
}

/** Options of {@link extractZipMembers}. */
export interface ExtractZipMembersOptions {
  /** Called after each member, with the bytes written so far. @default undefined */
  onProgress?: (p: { extractedBytes: number; members: number }) => void;
  /** Cancels the extraction (TS_ERR_ABORTED). @default undefined */
  signal?: AbortSignal;
}

/**
 * Writes every member of `zipPath` for which `pick` returns a path to that path (its folder is
 * made), in one pass over the zip; yauzl checks each member's CRC-32 as it inflates. Directory
 * entries are skipped. Returns the paths written.
 * @throws TurnstreamError TS_ERR_CORRUPT_WEIGHTS for a damaged zip
 */
export async function extractZipMembers(
  zipPath: string,
  pick: (member: string) => string | undefined,
  options: ExtractZipMembersOptions = {},
): Promise<string[]> {
  let zip: ZipFile;
  try {
    zip = await openZip(zipPath);
  } catch (err) {
    throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${zipPath} is not a readable zip: ${(err as Error).message}`, { cause: err });
  }
  const written: string[] = [];
  let extracted = 0;
  try {
    for (;;) {
      const entry = await nextEntry(zip);
      if (!entry) break;
      const dest = entry.fileName.endsWith('/') ? undefined : pick(entry.fileName);
      if (!dest) continue;
      await mkdir(dirname(dest), { recursive: true });
      try {
        const stream = await zip.openReadStreamPromise(entry);
        await pipeline(stream, createWriteStream(dest), { signal: options.signal });
      } catch (err) {
        await rm(dest, { force: true });
        if (options.signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, `extraction of ${zipPath} cancelled`, { cause: err });
        throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${zipPath}: cannot extract ${entry.fileName}: ${(err as Error).message}`, {
          cause: err,
        });
      }
      written.push(dest);
      extracted += entry.uncompressedSize;
      options.onProgress?.({ extractedBytes: extracted, members: written.length });
    }
  } finally {
    zip.close();
  }
  return written;
}

function nextEntry(zip: ZipFile): Promise<Entry | undefined> {
  return new Promise((resolve, reject) => {
    const onEntry = (entry: Entry): void => done(() => resolve(entry));
    const onEnd = (): void => done(() => resolve(undefined));
    const onError = (err: Error): void => done(() => reject(err));
    function done(settle: () => void): void {
      zip.off('entry', onEntry);
      zip.off('end', onEnd);
      zip.off('error', onError);
      settle();
    }
    zip.on('entry', onEntry);
    zip.on('end', onEnd);
    zip.on('error', onError);
    zip.readEntry();
  });
}
