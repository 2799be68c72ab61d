/**
 * Extracting one member of a zip (a Python wheel) with yauzl, streaming: the member is inflated
 * straight into `<dest>.part`, hashed on the way, checked, and renamed into place.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { ErrorCodes, TurnstreamError } from '../../core/errors.ts';

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
