/**
 * Downloading one file into the model cache: into `<dest>.part`, resumed with a Range request
 * after a broken connection, checked against the expected sha256 (or the one the Hugging Face hub
 * announces for LFS files in `x-linked-etag`), then renamed into place. Network failures are
 * retried with backoff (core/retry.ts, on the `retriable` flag); a wrong checksum is not.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { ErrorCodes, TurnstreamError, retry } from '../../core/index.ts';

/** Where a download stands. */
export interface DownloadProgress {
  receivedBytes: number;
  /** Unknown when the server sends no length. */
  totalBytes: number | undefined;
}

/** Options of {@link downloadFile}. */
export interface DownloadFileOptions {
  /** What to fetch (redirects are followed). */
  url: string;
  /** The final path; the download in progress is `<dest>.part`. */
  dest: string;
  /** Headers for requests to the URL's own origin (never forwarded to a redirect's other host, e.g. a CDN). @default {} */
  headers?: Record<string, string>;
  /** sha256 the file must have, hex. @default undefined = the server's announced one, if any */
  expectedSha256?: string;
  /** Size the file must have. @default undefined = the server's */
  expectedBytes?: number;
  /** Attempts after the first on retriable failures. @default 4 */
  retries?: number;
  /** First backoff delay, doubled each retry. @default 1000 */
  minRetryDelayMs?: number;
  /** Called as bytes arrive (after a resume, counting from what the part file already held). @default undefined */
  onProgress?: (p: DownloadProgress) => void;
  /** Called before each retry with the error that caused it. */
  onRetry?: (error: TurnstreamError, attempt: number) => void;
  /** Cancels the download (TS_ERR_ABORTED); the part file stays for the next attempt. @default undefined */
  signal?: AbortSignal;
}

/** A downloaded and verified file. */
export interface DownloadedFile {
  path: string;
  sha256: string;
  bytes: number;
  /** What was verified: the sha256 given, the one the server announced, or none. */
  verifiedBy: 'expected' | 'announced' | 'none';
}

const unavailable = (message: string, cause?: unknown): TurnstreamError => new TurnstreamError(ErrorCodes.UNAVAILABLE, message, { cause });

function statusError(status: number, url: string): TurnstreamError {
  if (status === 404 || status === 410) return new TurnstreamError(ErrorCodes.NOT_FOUND, `${url}: not found (HTTP ${status})`);
  if (status === 401 || status === 403) {
    return new TurnstreamError(ErrorCodes.UNAUTHORIZED, `${url}: HTTP ${status} (a gated or private model needs a token: HF_TOKEN)`);
  }
  if (status === 408 || status === 429 || status >= 500) return unavailable(`${url}: HTTP ${status}`);
  return new TurnstreamError(ErrorCodes.UPSTREAM, `${url}: unexpected HTTP ${status}`, { retriable: false });
}

/** `"abc…"`, `W/"abc…"` → the sha256 if the value is one. */
function announcedSha256(headers: Headers): string | undefined {
  const v = headers.get('x-linked-etag')?.replace(/^W\//, '').replace(/"/g, '').trim().toLowerCase();
  return v && /^[0-9a-f]{64}$/.test(v) ? v : undefined;
}

const partSize = async (path: string): Promise<number> =>
  stat(path).then(
    (s) => s.size,
    () => 0,
  );

async function hashExisting(path: string, hash: Hash, signal?: AbortSignal): Promise<void> {
  for await (const chunk of createReadStream(path, { signal })) hash.update(chunk as Buffer);
}

/** One download's fixed facts, shared by its attempts. */
interface Download {
  readonly options: DownloadFileOptions;
  readonly url: string;
  /** The file the bytes go to until they are verified. */
  readonly part: string;
  /** The URL's own origin, the only one its headers are sent to. */
  readonly origin: string;
}

/** The final answer to a request, after its redirects, with what the hops announced on the way. */
interface Answer {
  res: Response;
  announced?: string;
  announcedBytes?: number;
}

/**
 * Downloads `url` to `dest` (see the module comment). The caller holds the cache lock of `dest`.
 * @throws TurnstreamError TS_ERR_NOT_FOUND (404), TS_ERR_UNAUTHORIZED (401/403), TS_ERR_UNAVAILABLE
 *   when the retries ran out, TS_ERR_CORRUPT_WEIGHTS for a checksum or size mismatch, TS_ERR_ABORTED
 */
export async function downloadFile(options: DownloadFileOptions): Promise<DownloadedFile> {
  const { url, dest, signal } = options;
  const download: Download = { options, url, part: `${dest}.part`, origin: new URL(url).origin };
  return retry(() => attempt(download), {
    attempts: (options.retries ?? 4) + 1,
    baseMs: options.minRetryDelayMs ?? 1000,
    signal,
    onRetry: (err, n) => options.onRetry?.(err as TurnstreamError, n),
  });
}

/** One try: resume the part file (or start it), receive the rest, verify it and rename it into place. */
async function attempt(download: Download): Promise<DownloadedFile> {
  const { options, url, part } = download;
  let from = await partSize(part);
  if (options.expectedBytes !== undefined && from > options.expectedBytes) {
    await rm(part, { force: true });
    from = 0;
  }
  const { res, announced, announcedBytes } = await request(download, from);
  const start = await resumePoint(download, res, from, options.expectedBytes ?? announcedBytes);
  from = start.from;
  const { received, total, sha256 } = await receive(download, res, from, start.total);

  const expected = options.expectedSha256?.toLowerCase() ?? announced;
  const sizeWrong = total !== undefined && received !== total;
  if (sizeWrong || (expected && sha256 !== expected)) {
    await rm(part, { force: true });
    const what = sizeWrong ? `${received} bytes, expected ${total}` : `sha256 ${sha256}, expected ${expected}`;
    // A resumed download may have glued two versions of the file together: one more try from scratch.
    throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${url}: ${what}`, { retriable: from > 0 });
  }
  await rename(part, options.dest);
  return {
    path: options.dest,
    sha256,
    bytes: received,
    verifiedBy: options.expectedSha256 ? 'expected' : announced ? 'announced' : 'none',
  };
}

/** GETs the URL from byte `from`, following redirects by hand so that its headers stay on its origin. */
async function request(download: Download, from: number): Promise<Answer> {
  const { options, url, origin } = download;
  const { signal } = options;
  let current = url;
  let announced: string | undefined;
  let announcedBytes: number | undefined;
  for (let hop = 0; hop < 10; hop++) {
    const headers: Record<string, string> = {
      'user-agent': 'turnstream',
      ...(new URL(current).origin === origin ? options.headers : {}),
    };
    if (from > 0) headers.range = `bytes=${from}-`;
    let res: Response;
    try {
      res = await fetch(current, { headers, redirect: 'manual', signal });
    } catch (err) {
      if (signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, `download of ${url} cancelled`, { cause: err });
      throw unavailable(
        `${current}: ${(err as Error).message}${(err as { cause?: Error }).cause ? ` (${(err as { cause: Error }).cause.message})` : ''}`,
        err,
      );
    }
    // The hub announces an LFS file's sha256 and size on the redirect to its storage.
    announced ??= announcedSha256(res.headers);
    announcedBytes ??= Number(res.headers.get('x-linked-size')) || undefined;
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      current = new URL(location, current).href;
      continue;
    }
    return { res, announced, announcedBytes };
  }
  throw new TurnstreamError(ErrorCodes.UPSTREAM, `${url}: too many redirects`, { retriable: false });
}

/**
 * Reads the answer's status: where its body starts in the file (`from`, or 0 when the server
 * ignored the range) and the file's size where the answer tells it and `total` does not.
 */
async function resumePoint(
  download: Download,
  res: Response,
  from: number,
  total: number | undefined,
): Promise<{ from: number; total: number | undefined }> {
  const { url, part } = download;
  if (res.status === 416) {
    // Nothing left to send: the part may already be whole (a crash between download and rename).
    await res.body?.cancel();
    const size = Number(/\/(\d+)$/.exec(res.headers.get('content-range') ?? '')?.[1]);
    if (size !== from) {
      await rm(part, { force: true });
      throw unavailable(`${url}: the partial download does not fit the file (${from} of ${size || '?'} bytes); starting over`);
    }
    total ??= size;
  } else if (res.status === 206) {
    const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
    if (!range || Number(range[1]) !== from) {
      await res.body?.cancel();
      await rm(part, { force: true });
      throw unavailable(`${url}: the server resumed at the wrong place; starting over`);
    }
    if (range[3] !== '*') total ??= Number(range[3]);
  } else if (res.status === 200) {
    from = 0; // the server ignored the range: start over
    const length = Number(res.headers.get('content-length'));
    if (length > 0) total ??= length;
  } else {
    await res.body?.cancel();
    throw statusError(res.status, url);
  }
  return { from, total };
}

/** Appends the body to the part file (from byte `from`) and hashes the whole file as it grows. */
async function receive(
  download: Download,
  res: Response,
  from: number,
  total: number | undefined,
): Promise<{ received: number; total: number | undefined; sha256: string }> {
  const { options, url, part } = download;
  const { signal } = options;
  const hash = createHash('sha256');
  if (from > 0) await hashExisting(part, hash, signal);
  const file = await open(part, from > 0 ? 'a' : 'w');
  let received = from;
  options.onProgress?.({ receivedBytes: received, totalBytes: total });
  try {
    if (res.status !== 416 && res.body) {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        hash.update(chunk);
        let done = 0;
        while (done < chunk.byteLength) done += (await file.write(chunk, done, chunk.byteLength - done)).bytesWritten;
        received += chunk.byteLength;
        options.onProgress?.({ receivedBytes: received, totalBytes: total });
      }
    }
  } catch (err) {
    if (signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, `download of ${url} cancelled`, { cause: err });
    throw unavailable(`${url}: connection lost after ${received} bytes (${(err as Error).message}); resuming`, err);
  } finally {
    await file.close();
  }
  if (total !== undefined && received < total) throw unavailable(`${url}: got ${received} of ${total} bytes; resuming`);
  return { received, total, sha256: hash.digest('hex') };
}
