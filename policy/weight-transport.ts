/**
 * Weights that travel: a version's folder (`<weightsDir>/<modelId>/v<N>/`, the layout of both
 * weight stores: a LoRA adapter and its manifest, or a built-in checkpoint) carried through Kafka,
 * so that a gateway or a trainer on another host, with a home of its own, can serve or resume a
 * version it was told about.
 *
 * - The trainer (`TURNSTREAM_WEIGHTS_TRANSPORT=kafka`) publishes the folder's files as pieces on
 *   `turnstream.weight-blobs.v1` in the transaction of the WeightVersion, whose `uri` then reads
 *   `kafka://<topic>/<modelId>/<version>` (streams/weight-blobs.ts).
 * - A reader makes a version local before loading it: a `kafka://` version is fetched into its own
 *   store (pieces and files sha256-checked, written under a temporary name and renamed into
 *   place) unless the folder is there already — a gateway sharing the trainer's home fetches
 *   nothing, its store is the cache. Any other URI (a path, `file://`) is left to the store.
 * - Versions asked for by number alone (a pinned `model@N`) are found through the WeightVersions
 *   seen so far (`remember`), else by reading the topic from its beginning.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { counter, ErrorCodes, histogram, pathExists, TurnstreamError, type Logger } from '../core/index.ts';
import type { WeightVersion } from '../schemas/index.ts';
import {
  assembleChunks,
  chunkFiles,
  parseWeightBlobUri,
  readWeightChunks,
  weightBlobUri,
  weightChunkKey,
  type EventCodecs,
  type TransactionOutput,
} from '../streams/index.ts';
import { checkpointPath } from './builtin/checkpoint.ts';

/** How the trainer hands its versions to the gateways. `TURNSTREAM_WEIGHTS_TRANSPORT` */
export type WeightsTransportKind = 'file' | 'kafka';

/** A source of versions a store does not hold (AdapterStore asks it for a pinned version). */
export interface RemoteWeights {
  /** Brings `modelId` v`version` into `dir`; false when no such version is known to exist. */
  fetch(modelId: string, version: number, dir: string): Promise<boolean>;
}

export interface WeightTransportOptions {
  /** The local weight store's root: a version lives in `<weightsDir>/<modelId>/v<N>/`. */
  weightsDir: string;
  /** Kafka and the codecs; a gateway links to Kafka after it is built (`attach`). @default attached later */
  connection?: () => Promise<{ kafka: Kafka; codecs: EventCodecs }>;
  /** Bytes of a file per record. @default WEIGHT_CHUNK_BYTES (256 KiB) */
  chunkBytes?: number;
  /** How long a fetch keeps looking for pieces not readable yet. @default 10000 */
  waitMs?: number;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/** What `localize` did: the folder was there, it was fetched, or the URI is not Kafka's (left to the store). */
export type Localized = 'local' | 'fetched' | 'not-kafka';

const metrics = {
  fetched: counter('turnstream_weights_fetched_total', 'Weight versions fetched from Kafka into the local store', ['model']),
  failed: counter('turnstream_weights_fetch_failures_total', 'Weight versions whose fetch from Kafka failed (refused or missing)', [
    'model',
  ]),
  seconds: histogram(
    'turnstream_weights_fetch_seconds',
    'Time to fetch a weight version from Kafka',
    ['model'],
    [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
  ),
};

export class WeightTransport implements RemoteWeights {
  private connection: (() => Promise<{ kafka: Kafka; codecs: EventCodecs }>) | undefined;
  /** WeightVersions seen, by `<modelId>/<version>`: where and when to look for a pinned version. */
  private readonly known = new Map<string, WeightVersion>();
  /** The newest version seen of each model. */
  private readonly newest = new Map<string, number>();
  /** Fetches in progress, by target folder: a second caller waits for the first. */
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(private readonly o: WeightTransportOptions) {
    this.connection = o.connection;
  }

  /** Links the transport to Kafka (a gateway does once its Kafka link exists). */
  attach(connection: () => Promise<{ kafka: Kafka; codecs: EventCodecs }>): void {
    this.connection = connection;
  }

  /** The folder of a version in the local store. */
  path(modelId: string, version: number): string {
    return checkpointPath(this.o.weightsDir, modelId, version);
  }

  /**
   * The records that carry the version in `dir` (its files, in pieces) and the URI that names
   * them, for the trainer's transaction: the pieces go before the WeightVersion.
   */
  async publication(modelId: string, version: number, dir: string): Promise<{ uri: string; outputs: TransactionOutput[] }> {
    const { codecs } = await this.connect();
    const codec = codecs.of('weightBlobs');
    const files = [];
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.isFile()) files.push({ name: entry.name, data: await readFile(join(dir, entry.name)) });
    }
    const chunks = chunkFiles(modelId, version, files, { chunkBytes: this.o.chunkBytes });
    const outputs = chunks.map((c) => ({ topic: codec.topic, key: weightChunkKey(modelId, version, c.index), value: codec.encodeNow(c) }));
    return { uri: weightBlobUri(codec.topic, modelId, version), outputs };
  }

  /** Notes a WeightVersion seen on the weights topic (for a pinned version asked for later). */
  remember(wv: WeightVersion): void {
    if (!parseWeightBlobUri(wv.uri)) return;
    this.known.set(`${wv.modelId}/${wv.version}`, wv);
    if (wv.version > (this.newest.get(wv.modelId) ?? -1)) this.newest.set(wv.modelId, wv.version);
  }

  /**
   * Makes the version a WeightVersion names local: fetched when its URI is Kafka's and the folder
   * (`dir`, by default its place in the store) is not there yet.
   * @throws TurnstreamError CORRUPT_WEIGHTS (a piece or file fails its sha256, pieces missing), NOT_FOUND, UNAVAILABLE
   */
  async localize(wv: WeightVersion, dir = this.path(wv.modelId, wv.version)): Promise<Localized> {
    const at = parseWeightBlobUri(wv.uri);
    if (!at) return 'not-kafka';
    this.remember(wv);
    if (await pathExists(dir)) return 'local';
    await this.fetchInto(dir, wv.modelId, wv.version, { topic: at.topic, since: wv.createdAt });
    return 'fetched';
  }

  /** RemoteWeights: a version asked for by number (`model@N`) that the store lacks. */
  async fetch(modelId: string, version: number, dir: string): Promise<boolean> {
    if (!this.connection) return false;
    const wv = this.known.get(`${modelId}/${version}`);
    // A version whose WeightVersion was compacted away is looked for from the topic's beginning,
    // once, with no waiting; one above every version seen is not looked for at all.
    if (!wv && !(version < (this.newest.get(modelId) ?? 0))) return false;
    const at = wv ? parseWeightBlobUri(wv.uri) : null;
    try {
      await this.fetchInto(dir, modelId, version, { topic: at?.topic, since: wv?.createdAt, waitMs: wv ? undefined : 0 });
    } catch (err) {
      if (err instanceof TurnstreamError && err.code === ErrorCodes.NOT_FOUND) return false;
      throw err;
    }
    return true;
  }

  private async connect(): Promise<{ kafka: Kafka; codecs: EventCodecs }> {
    if (!this.connection) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'the weight transport is not linked to Kafka yet');
    return this.connection();
  }

  private fetchInto(dir: string, modelId: string, version: number, where: FetchWhere): Promise<void> {
    let p = this.inflight.get(dir);
    if (!p) {
      p = this.download(dir, modelId, version, where).finally(() => this.inflight.delete(dir));
      this.inflight.set(dir, p);
    }
    return p;
  }

  private async download(dir: string, modelId: string, version: number, where: FetchWhere): Promise<void> {
    const started = performance.now();
    try {
      const { kafka, codecs } = await this.connect();
      const chunks = await readWeightChunks(kafka, codecs.of('weightBlobs'), modelId, version, {
        topic: where.topic,
        since: where.since,
        waitMs: where.waitMs ?? this.o.waitMs,
      });
      const files = assembleChunks(modelId, version, chunks);
      const tmp = `${dir}.fetch-${process.pid}-${randomBytes(4).toString('hex')}`;
      await mkdir(tmp, { recursive: true });
      try {
        for (const f of files) await writeFile(join(tmp, f.name), f.data, { flush: true });
        await rename(tmp, dir);
      } catch (err) {
        await rm(tmp, { recursive: true, force: true });
        // Another process (a trainer sharing the home, a second gateway) put it there meanwhile.
        if (!(await pathExists(dir))) throw err;
      }
      const seconds = (performance.now() - started) / 1000;
      metrics.fetched.inc({ model: modelId });
      metrics.seconds.observe({ model: modelId }, seconds);
      this.o.logger?.info(
        { modelId, version, pieces: chunks.length, bytes: files.reduce((n, f) => n + f.data.length, 0), ms: Math.round(seconds * 1000) },
        'weight version fetched from Kafka',
      );
    } catch (err) {
      metrics.failed.inc({ model: modelId });
      throw err;
    }
  }
}

/** Where a fetch looks: the topic a URI names, from when, and how long it waits for pieces not readable yet. */
interface FetchWhere {
  topic?: string;
  since?: number;
  waitMs?: number;
}
