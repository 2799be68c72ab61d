/**
 * A weight version's files as records of `turnstream.weight-blobs.v1`, so that a gateway (or a
 * trainer) on a host with no shared disk can fetch the version a WeightVersion names
 * (`kafka://<topic>/<modelId>/<version>`).
 *
 * Each file is cut into pieces of at most WEIGHT_CHUNK_BYTES, numbered across the version's files
 * and keyed `<modelId>/<version>/<index>`; every piece carries its own sha256 and its file's. The
 * pieces are published in the same transaction as the WeightVersion that names them (before it),
 * so a read_committed reader sees both or neither, and a retried or aborted attempt leaves nothing
 * visible. A reader finds them from the WeightVersion's time (the pieces are written after it is
 * made), in every partition, and stops once it holds them all.
 */
import { createHash } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { ErrorCodes, TurnstreamError, retry } from '../core/index.ts';
import type { Codec, WeightChunk } from '../schemas/index.ts';
import { readToEnd } from './topic-reader.ts';

/**
 * Bytes of a file in one record: a record batch of one piece (Transactions sends at most 512 KiB
 * per request, so each piece goes alone) stays at a quarter of the topic's `max.message.bytes`
 * (1 MiB) and of the broker's and the consumer's 1 MiB defaults.
 */
export const WEIGHT_CHUNK_BYTES = 256 * 1024;

/**
 * How far before the WeightVersion's `createdAt` a reader starts looking for its pieces: they are
 * stamped by the same host after it, unless the topic stamps records with the broker's clock
 * (`LogAppendTime`) and the clocks differ. A read that misses pieces starts again from the beginning.
 */
const SINCE_SLACK_MS = 60_000;

/** One file of a version's folder. */
export interface BlobFile {
  /** A plain file name (no folder). */
  name: string;
  data: Buffer;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** `kafka://<topic>/<modelId>/<version>`: where a WeightVersion's files are. */
export function weightBlobUri(topic: string, modelId: string, version: number): string {
  return `kafka://${topic}/${modelId}/${version}`;
}

/** The topic, model id and version of a `kafka://` weight URI; null for any other URI. */
export function parseWeightBlobUri(uri: string): { topic: string; modelId: string; version: number } | null {
  const m = /^kafka:\/\/([^/]+)\/([^/]+)\/(\d+)$/.exec(uri);
  return m ? { topic: m[1], modelId: m[2], version: Number(m[3]) } : null;
}

/** The record key of a version's piece `index`. */
export const weightChunkKey = (modelId: string, version: number, index: number): string => `${modelId}/${version}/${index}`;

/** Cuts a version's files into pieces (an empty file is one empty piece, so that it exists after). */
export function chunkFiles(
  modelId: string,
  version: number,
  files: readonly BlobFile[],
  options: { chunkBytes?: number; createdAt?: number } = {},
): WeightChunk[] {
  const size = options.chunkBytes ?? WEIGHT_CHUNK_BYTES;
  if (!Number.isInteger(size) || size < 1)
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `chunk size ${size} is not a positive integer`);
  const createdAt = options.createdAt ?? Date.now();
  const pieces: Array<Omit<WeightChunk, 'index' | 'count'>> = [];
  for (const f of files) {
    if (!FILE_NAME.test(f.name)) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${JSON.stringify(f.name)} is not a plain file name`);
    const fileSha256 = sha256(f.data);
    for (let at = 0; at === 0 || at < f.data.length; at += size) {
      const data = f.data.subarray(at, at + size);
      pieces.push({
        modelId,
        version,
        file: f.name,
        fileOffset: at,
        fileBytes: f.data.length,
        fileSha256,
        sha256: sha256(data),
        data,
        createdAt,
      });
    }
  }
  return pieces.map((p, index) => ({ ...p, index, count: pieces.length }));
}

/**
 * The files of a version from its pieces, each piece and each file checked against its sha256.
 * @throws TurnstreamError CORRUPT_WEIGHTS naming the first piece or file that does not check out
 */
export function assembleChunks(modelId: string, version: number, chunks: Iterable<WeightChunk>): BlobFile[] {
  const what = `${modelId} v${version}`;
  const byIndex = new Map<number, WeightChunk>();
  let count = -1;
  for (const c of chunks) {
    if (c.modelId !== modelId || c.version !== version) {
      throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `a piece of ${c.modelId} v${c.version} was filed under ${what}`);
    }
    if (count >= 0 && c.count !== count) {
      throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `the pieces of ${what} disagree on their number (${count} and ${c.count})`);
    }
    count = c.count;
    const got = sha256(c.data);
    if (got !== c.sha256) {
      throw new TurnstreamError(
        ErrorCodes.CORRUPT_WEIGHTS,
        `piece ${c.index} of ${what} (${c.file} at byte ${c.fileOffset}) has sha256 ${got}, its record says ${c.sha256}`,
      );
    }
    byIndex.set(c.index, c);
  }
  if (count < 0) throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no piece of ${what}`);
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !byIndex.has(i));
  if (missing.length > 0) {
    throw new TurnstreamError(
      ErrorCodes.CORRUPT_WEIGHTS,
      `${what}: ${missing.length} of its ${count} pieces are missing (${missing.slice(0, 5).join(', ')}…)`,
    );
  }
  const files = new Map<string, WeightChunk[]>();
  for (let i = 0; i < count; i++) {
    const c = byIndex.get(i)!;
    const list = files.get(c.file) ?? [];
    list.push(c);
    files.set(c.file, list);
  }
  return [...files].map(([name, parts]) => {
    if (!FILE_NAME.test(name)) throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${what} names a file ${JSON.stringify(name)}`);
    parts.sort((a, b) => a.fileOffset - b.fileOffset);
    const data = Buffer.concat(parts.map((p) => p.data));
    const { fileBytes, fileSha256 } = parts[0];
    let at = 0;
    for (const p of parts) {
      if (p.fileOffset !== at || p.fileBytes !== fileBytes || p.fileSha256 !== fileSha256) {
        throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `the pieces of ${name} of ${what} do not fit together (at byte ${at})`);
      }
      at += p.data.length;
    }
    const got = sha256(data);
    if (data.length !== fileBytes || got !== fileSha256) {
      throw new TurnstreamError(
        ErrorCodes.CORRUPT_WEIGHTS,
        `${name} of ${what} assembled to ${data.length} bytes with sha256 ${got}; its pieces say ${fileBytes} bytes, sha256 ${fileSha256}`,
      );
    }
    return { name, data };
  });
}

export interface ReadWeightChunksOptions {
  /** The topic the WeightVersion's URI names. @default the codec's */
  topic?: string;
  /** The WeightVersion's `createdAt`: the read starts shortly before it. @default the topic's beginning */
  since?: number;
  /**
   * How long to keep looking while pieces are missing: the WeightVersion can be readable a moment
   * before its pieces are (the transaction's markers are written partition by partition). @default 10000
   */
  waitMs?: number;
  /** Bound on one read of the topic. @default 120000 */
  timeoutMs?: number;
}

/**
 * Reads the pieces of `modelId` v`version` from the topic (read_committed), the last record
 * of each key; an incomplete set is read again from the topic's beginning, then retried for `waitMs`.
 * @throws TurnstreamError NOT_FOUND (no piece) or CORRUPT_WEIGHTS (some missing) once `waitMs` is spent
 */
export async function readWeightChunks(
  kafka: Kafka,
  codec: Codec<WeightChunk>,
  modelId: string,
  version: number,
  options: ReadWeightChunksOptions = {},
): Promise<WeightChunk[]> {
  const topic = options.topic ?? codec.topic;
  const prefix = `${modelId}/${version}/`;
  const read = async (from: Map<number, bigint> | undefined): Promise<Map<number, WeightChunk>> => {
    const got = new Map<number, WeightChunk>();
    let count = -1;
    await readToEnd(
      kafka,
      topic,
      async (r) => {
        const key = r.key?.toString('utf8');
        if (!key?.startsWith(prefix)) return;
        if (!r.value) {
          got.delete(Number(key.slice(prefix.length))); // a tombstone: the version was deleted
          return;
        }
        const c = await codec.decode(r.value);
        got.set(c.index, c);
        count = c.count;
      },
      { from, stopWhen: () => count >= 0 && got.size >= count, timeoutMs: options.timeoutMs },
    );
    return got;
  };
  const attempt = async (): Promise<WeightChunk[]> => {
    let got = await read(options.since === undefined ? undefined : await offsetsAt(kafka, topic, options.since - SINCE_SLACK_MS));
    if (options.since !== undefined && !complete(got)) got = await read(undefined);
    if (complete(got)) return [...got.values()];
    const what = `${modelId} v${version}`;
    if (got.size === 0) throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no piece of ${what} on ${topic}`, { retriable: true });
    throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${what}: ${got.size} of its ${[...got.values()][0].count} pieces on ${topic}`, {
      retriable: true,
    });
  };
  return retry(attempt, { baseMs: 100, maxMs: 2000, maxTimeMs: options.waitMs ?? 10_000 });
}

function complete(got: Map<number, WeightChunk>): boolean {
  const first = got.values().next().value;
  return first !== undefined && got.size >= first.count;
}

/** Per partition, the first offset at or after `time` (partitions with nothing that recent: their end). */
async function offsetsAt(kafka: Kafka, topic: string, time: number): Promise<Map<number, bigint>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [at, ends] = await Promise.all([admin.fetchTopicOffsetsByTimestamp(topic, time), admin.fetchTopicOffsets(topic)]);
    const high = new Map(ends.map((o) => [o.partition, BigInt(o.high)]));
    return new Map(at.map((o) => [o.partition, o.offset === '-1' ? (high.get(o.partition) ?? 0n) : BigInt(o.offset)]));
  } finally {
    await admin.disconnect();
  }
}
