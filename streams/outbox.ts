/**
 * A local, fsync'd outbox: the gateway appends every event here first, and a drainer sends
 * the events to Kafka in order. Kafka slow or down never fails or stalls the caller (an
 * append costs one group-committed fsync), and nothing is lost across restarts.
 *
 * On disk (`dir`):
 * - `outbox.jsonl`: append-only, one JSON record per line (`{ seq, topic, key, value, headers }`).
 * - `cursor.json`: `{ offset, seq }`, the byte offset of the first record not yet acknowledged
 *   by Kafka, rewritten atomically (tmp + fsync + rename) after each drained batch.
 *
 * Exactly once: a batch is sent by an idempotent producer, then the cursor moves past it. A
 * crash between the broker's ack and the cursor write re-sends that batch on restart; every
 * event carries a deterministic id (turnId, feedbackId), so downstream dedupes those few.
 * When everything is drained and the file is larger than `compactBytes`, it is truncated
 * (file first, then cursor: a crash in between leaves a cursor past the end, read as 0).
 * A torn last line (crash mid-append) is cut off on open: its caller never got an ack.
 *
 * A record the sender refuses for good (a `TurnstreamError` that is not retriable: too large for
 * its topic, not encodable) never blocks the records behind it. The batch is split in halves
 * until the record is alone; it is then appended to `dead-letters.jsonl` (fsync'd, so it is not
 * lost), handed to `deadLetter` (the gateway publishes a DeadLetter), and the cursor moves past
 * it. Any other failure (Kafka away, a plain Error) is retried with backoff, the batch unchanged.
 */
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { mkdir, open, readFile, rename, stat, truncate, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, ErrorCodes, TurnstreamError } from '../core/index.ts';

/** One event waiting in the outbox. */
export interface OutboxRecord<V = unknown> {
  /** Monotonic sequence number within this outbox. */
  seq: number;
  /** Logical topic id (`turns`, `feedback`, …). */
  topic: string;
  key: string;
  /** JSON-serializable event value. */
  value: V;
  headers?: Record<string, string>;
}

/**
 * Sends a batch to Kafka, in order; resolves only when every record is acknowledged. Throws a
 * non-retriable `TurnstreamError` when a record of the batch can never be sent (the outbox then
 * isolates and sets it aside); anything else thrown is retried.
 */
export type OutboxSender = (records: OutboxRecord[]) => Promise<void>;

/**
 * Publishes a record the sender refused for good (the gateway: a DeadLetter on the DLQ topic).
 * `keptIn` is the local file that holds the record whole. A throw is retried later.
 */
export type OutboxDeadLetterSender = (record: OutboxRecord, error: TurnstreamError, keptIn: string) => Promise<void>;

export interface OutboxOptions {
  /** Folder of `outbox.jsonl` and `cursor.json` (created). */
  dir: string;
  /** Sends drained batches. Without one, records only accumulate until `setSender`. */
  sender?: OutboxSender;
  /** Publishes records the sender refused for good. @default none (they are only kept in `dead-letters.jsonl`) */
  deadLetter?: OutboxDeadLetterSender;
  /** Most records per drained batch. @default 100 */
  maxBatchRecords?: number;
  /** Most bytes read per drained batch. @default 4 MiB */
  maxBatchBytes?: number;
  /** First retry delay after a failed send; doubles up to `maxRetryDelayMs`. @default 200 */
  retryDelayMs?: number;
  /** @default 5000 */
  maxRetryDelayMs?: number;
  /** Truncate the file when fully drained and larger than this. @default 8 MiB */
  compactBytes?: number;
  logger?: Pick<Logger, 'info' | 'warn' | 'error' | 'debug'>;
}

export interface OutboxStats {
  /** Records appended but not yet acknowledged by Kafka. */
  depth: number;
  /** Records acknowledged since open. */
  drained: number;
  /** Failed send attempts since open. */
  failures: number;
  /** Records the sender refused for good since open, set aside in `dead-letters.jsonl`. */
  deadLettered: number;
  /**
   * How long the outbox has held records without draining any (0 when empty): the time since
   * the last acknowledged batch, or since the first record arrived in an empty outbox.
   */
  stalledMs: number;
  /** The last send error, cleared by a successful send. */
  lastError: string | null;
  /** The file is open and appends succeed. */
  healthy: boolean;
}

interface Cursor {
  offset: number;
  seq: number;
}

interface Batch {
  records: OutboxRecord[];
  /** Byte offset just past the batch. */
  end: number;
  /** Unparseable lines skipped in it. */
  bad: number;
}

interface PendingAppend {
  line: Buffer;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

export class Outbox {
  private readonly dir: string;
  private readonly file: string;
  private readonly cursorFile: string;
  private readonly opts: Required<Omit<OutboxOptions, 'sender' | 'deadLetter' | 'logger' | 'dir'>>;
  private readonly logger: OutboxOptions['logger'];
  private sender: OutboxSender | undefined;
  private fh: FileHandle | null = null;
  private size = 0;
  private cursor: Cursor = { offset: 0, seq: 0 };
  private nextSeq = 1;
  private queue: PendingAppend[] = [];
  private writing: Promise<void> | null = null;
  private draining: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly stopCtl = new AbortController();
  /** A batch whose send failed: retried exactly as it was (same records, same order). */
  private retryBatch: Batch | null = null;
  /** A refused record kept locally whose DeadLetter is not published yet. */
  private aside: { batch: Batch; error: TurnstreamError } | null = null;
  /** Records per batch: halved while isolating a refused record, then doubled back. */
  private batchLimit: number;
  private deadLetter: OutboxDeadLetterSender | undefined;
  private progressAt = Date.now();
  private closed = false;
  private readonly s: Omit<OutboxStats, 'stalledMs'> = {
    depth: 0,
    drained: 0,
    failures: 0,
    deadLettered: 0,
    lastError: null,
    healthy: false,
  };

  private constructor(options: OutboxOptions) {
    this.dir = options.dir;
    this.file = join(options.dir, 'outbox.jsonl');
    this.cursorFile = join(options.dir, 'cursor.json');
    this.sender = options.sender;
    this.deadLetter = options.deadLetter;
    this.logger = options.logger;
    this.opts = {
      maxBatchRecords: options.maxBatchRecords ?? 100,
      maxBatchBytes: options.maxBatchBytes ?? 4 * 1024 * 1024,
      retryDelayMs: options.retryDelayMs ?? 200,
      maxRetryDelayMs: options.maxRetryDelayMs ?? 5000,
      compactBytes: options.compactBytes ?? 8 * 1024 * 1024,
    };
    this.batchLimit = this.opts.maxBatchRecords;
  }

  /** Opens (or creates) the outbox, repairs a torn tail, and starts draining what is left. */
  static async open(options: OutboxOptions): Promise<Outbox> {
    const ob = new Outbox(options);
    await ob.init();
    return ob;
  }

  private async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    try {
      const c = JSON.parse(await readFile(this.cursorFile, 'utf8')) as Cursor;
      if (Number.isInteger(c.offset) && c.offset >= 0) this.cursor = { offset: c.offset, seq: c.seq ?? 0 };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.logger?.warn({ err }, 'outbox cursor unreadable; draining from the start (downstream dedupes)');
      }
    }
    this.fh = await open(this.file, 'a+');
    this.size = (await this.fh.stat()).size;
    if (this.cursor.offset > this.size) this.cursor = { offset: 0, seq: this.cursor.seq };
    // Count what is left and cut a torn tail.
    const rest =
      this.size > this.cursor.offset ? await this.readRange(this.cursor.offset, this.size - this.cursor.offset) : Buffer.alloc(0);
    const lastNl = rest.lastIndexOf(0x0a);
    const good = lastNl + 1;
    if (good < rest.length) {
      this.logger?.warn({ bytes: rest.length - good }, 'outbox: cutting a torn last record (never acknowledged)');
      await this.fh.close();
      await truncate(this.file, this.cursor.offset + good);
      this.fh = await open(this.file, 'a+');
      this.size = this.cursor.offset + good;
    }
    let maxSeq = this.cursor.seq;
    let depth = 0;
    for (const line of rest.subarray(0, good).toString('utf8').split('\n')) {
      if (!line) continue;
      depth++;
      try {
        maxSeq = Math.max(maxSeq, (JSON.parse(line) as OutboxRecord).seq);
      } catch {
        /* counted; reported when drained */
      }
    }
    this.nextSeq = maxSeq + 1;
    this.s.depth = depth;
    this.s.healthy = true;
    if (depth > 0) this.logger?.info({ depth }, 'outbox: resuming drain of records left by a previous run');
    this.draining = this.drainLoop();
  }

  /** Sets (or replaces) the sender (and the dead-letter sender) and wakes the drainer. */
  setSender(sender: OutboxSender, deadLetter?: OutboxDeadLetterSender): void {
    this.sender = sender;
    if (deadLetter) this.deadLetter = deadLetter;
    this.kick();
  }

  stats(): OutboxStats {
    return { ...this.s, stalledMs: this.s.depth > 0 ? Date.now() - this.progressAt : 0 };
  }

  get depth(): number {
    return this.s.depth;
  }

  /**
   * Appends one record durably (resolved after fsync; concurrent appends share one fsync)
   * and wakes the drainer. Returns the record's sequence number.
   */
  async append(topic: string, key: string, value: unknown, headers?: Record<string, string>): Promise<number> {
    if (this.closed) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'outbox is closed');
    const seq = this.nextSeq++;
    const rec: OutboxRecord = { seq, topic, key, value, ...(headers ? { headers } : {}) };
    const line = Buffer.from(JSON.stringify(rec) + '\n', 'utf8');
    await new Promise<void>((resolve, reject) => {
      this.queue.push({ line, resolve, reject });
      if (!this.writing) this.writing = this.writeLoop();
    });
    return seq;
  }

  // Group commit: everything queued while the previous write+fsync ran goes in one write.
  private async writeLoop(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        try {
          const buf = Buffer.concat(batch.map((p) => p.line));
          await this.fh!.write(buf, 0, buf.length, null);
          await this.fh!.datasync();
          this.size += buf.length;
          if (this.s.depth === 0) this.progressAt = Date.now();
          this.s.depth += batch.length;
          this.s.healthy = true;
          for (const p of batch) p.resolve();
        } catch (err) {
          this.s.healthy = false;
          this.logger?.error({ err }, 'outbox append failed');
          const e = new TurnstreamError(ErrorCodes.UNAVAILABLE, `outbox append failed: ${(err as Error).message}`, { cause: err });
          for (const p of batch) p.reject(e);
        }
      }
    } finally {
      this.writing = null;
    }
    this.kick();
  }

  private kick(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async readRange(offset: number, length: number): Promise<Buffer> {
    const buf = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await this.fh!.read(buf, read, length - read, offset + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buf.subarray(0, read);
  }

  /** Reads the next batch (at most `batchLimit` records) after the cursor: records and the byte offset just past them. */
  private async nextBatch(): Promise<Batch | null> {
    const avail = this.size - this.cursor.offset;
    if (avail <= 0) return null;
    let len = Math.min(avail, this.opts.maxBatchBytes);
    let buf = await this.readRange(this.cursor.offset, len);
    let lastNl = buf.lastIndexOf(0x0a);
    while (lastNl < 0 && len < avail) {
      // One record larger than maxBatchBytes: read until its end.
      len = Math.min(avail, len * 2);
      buf = await this.readRange(this.cursor.offset, len);
      lastNl = buf.lastIndexOf(0x0a);
    }
    if (lastNl < 0) return null;
    const records: OutboxRecord[] = [];
    let consumed = 0;
    let bad = 0;
    let start = 0;
    while (start <= lastNl && records.length < this.batchLimit) {
      const nl = buf.indexOf(0x0a, start);
      const line = buf.subarray(start, nl).toString('utf8');
      start = nl + 1;
      consumed = start;
      if (!line) continue;
      try {
        records.push(JSON.parse(line) as OutboxRecord);
      } catch (err) {
        bad++;
        this.logger?.error({ err, line: line.slice(0, 200) }, 'outbox: skipping an unparseable record');
      }
    }
    return { records, end: this.cursor.offset + consumed, bad };
  }

  private async writeCursor(c: Cursor): Promise<void> {
    const tmp = `${this.cursorFile}.tmp`;
    const h = await open(tmp, 'w');
    try {
      await h.writeFile(JSON.stringify(c));
      await h.datasync();
    } finally {
      await h.close();
    }
    await rename(tmp, this.cursorFile);
    // fsync the directory so the rename survives a power cut.
    try {
      const d = openSync(this.dir, 'r');
      try {
        fsyncSync(d);
      } finally {
        closeSync(d);
      }
    } catch {
      /* not supported on every platform */
    }
  }

  private async drainLoop(): Promise<void> {
    let delay = this.opts.retryDelayMs;
    while (!this.stopCtl.signal.aborted) {
      const progressed = await this.drainOnce().catch((err: unknown) => {
        this.s.failures++;
        this.s.lastError = (err as Error).message;
        this.logger?.warn({ err: (err as Error).message, depth: this.s.depth, retryInMs: delay }, 'outbox: send failed; will retry');
        return 'failed' as const;
      });
      if (progressed === 'failed') {
        await sleep(delay, this.stopCtl.signal);
        delay = Math.min(delay * 2, this.opts.maxRetryDelayMs);
        continue;
      }
      delay = this.opts.retryDelayMs;
      if (progressed) continue;
      await new Promise<void>((resolve) => {
        const signal = this.stopCtl.signal;
        if (signal.aborted) return resolve();
        const done = (): void => {
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** Sends one batch; true when it made progress, false when there was nothing to send. */
  private async drainOnce(): Promise<boolean> {
    if (this.aside) return this.publishAside(this.aside.batch, this.aside.error);
    if (!this.sender || this.size <= this.cursor.offset) return false;
    // Resend a failed batch unchanged, so the idempotent producer's sequence numbers match.
    const batch = this.retryBatch ?? (await this.nextBatch());
    if (!batch) return false;
    this.retryBatch = batch;
    try {
      if (batch.records.length > 0) await this.sender(batch.records);
    } catch (err) {
      if (!(err instanceof TurnstreamError) || err.retriable) throw err;
      // Refused for good: nothing of it was sent (or the broker refused it whole). Isolate the
      // offending record by halving the batch; then set it aside and move on.
      this.retryBatch = null;
      if (batch.records.length > 1) {
        this.batchLimit = Math.max(1, Math.floor(batch.records.length / 2));
        return true;
      }
      return this.setAside(batch, err);
    }
    this.retryBatch = null;
    await this.advance(batch);
    this.s.drained += batch.records.length;
    this.batchLimit = Math.min(this.opts.maxBatchRecords, this.batchLimit * 2);
    return true;
  }

  /** Moves the cursor past `batch` (durably) and updates the counts. */
  private async advance(batch: Batch): Promise<void> {
    const last = batch.records[batch.records.length - 1];
    this.cursor = { offset: batch.end, seq: last?.seq ?? this.cursor.seq };
    await this.writeCursor(this.cursor);
    this.s.depth = Math.max(0, this.s.depth - batch.records.length - batch.bad);
    this.s.lastError = null;
    this.progressAt = Date.now();
    await this.maybeCompact();
  }

  /** Keeps a refused record in `dead-letters.jsonl` (fsync'd), then publishes it. */
  private async setAside(batch: Batch, error: TurnstreamError): Promise<boolean> {
    const record = batch.records[0];
    this.logger?.error(
      { seq: record?.seq, topic: record?.topic, key: record?.key, code: error.code, err: error.message },
      'outbox: a record was refused for good; setting it aside so the records behind it are sent',
    );
    if (record) {
      const h = await open(this.deadFile, 'a');
      try {
        await h.write(JSON.stringify({ ...record, code: error.code, reason: error.message, failedAt: Date.now() }) + '\n');
        await h.datasync();
      } finally {
        await h.close();
      }
    }
    this.aside = { batch, error };
    return this.publishAside(batch, error);
  }

  private async publishAside(batch: Batch, error: TurnstreamError): Promise<boolean> {
    const record = batch.records[0];
    if (record && this.deadLetter) await this.deadLetter(record, error, this.deadFile);
    this.aside = null;
    await this.advance(batch);
    this.s.deadLettered += batch.records.length;
    // The offender is out of the way: what follows goes in full batches again.
    this.batchLimit = this.opts.maxBatchRecords;
    return true;
  }

  /** Where refused records are kept whole. */
  get deadFile(): string {
    return join(this.dir, 'dead-letters.jsonl');
  }

  private async maybeCompact(): Promise<void> {
    if (this.cursor.offset < this.size || this.size < this.opts.compactBytes) return;
    if (this.writing || this.queue.length > 0) return;
    await this.fh!.truncate(0);
    await this.fh!.datasync();
    this.size = 0;
    this.cursor = { offset: 0, seq: this.cursor.seq };
    await this.writeCursor(this.cursor);
  }

  /**
   * Waits until everything appended so far is acknowledged, or `timeoutMs` passes.
   * Resolves true when the outbox is empty.
   */
  async flush(timeoutMs = 5000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.writing) await this.writing;
      if (this.s.depth === 0 && this.cursor.offset >= this.size) return true;
      this.kick();
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.s.depth === 0;
  }

  /**
   * Stops: finishes pending appends, tries to drain for up to `drainTimeoutMs` (0: do not
   * try), then stops the drainer and closes the file. What is left stays on disk and is
   * drained by the next run.
   */
  async close(drainTimeoutMs = 5000): Promise<OutboxStats> {
    if (this.closed) return this.stats();
    this.closed = true;
    if (this.writing) await this.writing;
    if (drainTimeoutMs > 0 && this.sender) await this.flush(drainTimeoutMs);
    this.stopCtl.abort();
    // A send in flight may still be waiting on Kafka; do not wait on it forever.
    await Promise.race([this.draining, new Promise((r) => setTimeout(r, 1000))]);
    await this.fh?.close();
    this.fh = null;
    this.s.healthy = false;
    if (this.s.depth > 0) this.logger?.info({ depth: this.s.depth }, 'outbox: records kept on disk for the next run');
    return this.stats();
  }
}

/** Size in bytes of the outbox file (for diagnostics). */
export async function outboxFileSize(dir: string): Promise<number> {
  try {
    return (await stat(join(dir, 'outbox.jsonl'))).size;
  } catch {
    return 0;
  }
}
