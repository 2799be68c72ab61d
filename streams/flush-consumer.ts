/**
 * "Flush, then commit": the consumer group of a stage that stores what it reads outside Kafka
 * (the ClickHouse sink). Each fetched record is handed to `handle`, which buffers what it makes
 * of it; a flush stores everything buffered, and only then are the offsets it covers committed.
 * A crash before the commit means re-delivery, never loss, so the store must take a record twice
 * without harm (the sink's tables collapse rows by event id).
 *
 * - A flush starts once `flushAt` items are buffered or the oldest is `flushIntervalMs` old;
 *   fetching goes on meanwhile. Once `maxBuffered` items wait, the batch handler waits for
 *   flushes to make room (kafkajs fetches nothing more meanwhile); while the store is failing,
 *   fetching pauses instead.
 * - A failed flush pauses fetching and is retried with backoff (core/retry.ts) until it succeeds
 *   or the consumer stops; nothing is committed past what was stored.
 * - `rejoin` follows a new topic list: kafkajs fixes a subscription when the consumer joins, so
 *   it stops fetching, flushes and commits, leaves, and joins again.
 *
 * Offsets are tracked here, the items by the caller: `flush` must take its buffer before its
 * first await, so that both describe the same records.
 */
import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { ErrorCodes, TurnstreamError, type Logger, retry } from '../core/index.ts';

export interface FlushConsumerOptions {
  kafka: Kafka;
  /** Consumer group; more instances with the same group share the partitions. */
  groupId: string;
  /** Read from the group's position; a new group starts as `fromBeginning` says. */
  topics: string[];
  /** Always read from their beginning when the group has no position (a replay's outputs). @default [] */
  topicsFromStart?: string[];
  /** @default true */
  fromBeginning?: boolean;
  /** @default 30000 */
  sessionTimeoutMs?: number;
  logger: Logger;
  /** Buffered items that start a flush. @default 500 */
  flushAt?: number;
  /** …or the age of the oldest record not yet flushed, in ms. @default 500 */
  flushIntervalMs?: number;
  /**
   * Fetching waits for flushes while this many items wait. Room for many flushes keeps the reading
   * going while the store takes one (`bench sink --users 100`, alternating: 100 × flushAt 51.8–58.9k rows/s, 20 × 40.4–44.0k).
   * @default 100 × flushAt
   */
  maxBuffered?: number;
  /** First retry delay after a failed flush, doubled up to `retryMaxMs`. @default 250 */
  retryInitialMs?: number;
  /** @default 5000 */
  retryMaxMs?: number;
  /** One fetched record: buffer what it becomes. A promise only where it must wait; fetching waits with it. */
  handle(topic: string, partition: number, message: KafkaMessage): Promise<void> | undefined;
  /** Items buffered by `handle` and not flushed yet. */
  buffered(): number;
  /** Stores everything buffered; takes the buffer before its first await, and keeps it for the next flush when it fails. */
  flush(): Promise<void>;
  /** Called when fetching pauses or resumes (metrics). */
  onPaused?: (paused: boolean) => void;
}

export interface FlushConsumerStats {
  /** Partition offsets committed. */
  commits: number;
  /** Fetching is paused (the store failing, or the buffer full). */
  paused: boolean;
  /** Topics of the current subscription. */
  topics: string[];
  /** Times it left and joined again with another topic list. */
  rejoins: number;
}

const key = (topic: string, partition: number): string => `${topic}|${partition}`;

export class FlushConsumer {
  private readonly o: FlushConsumerOptions;
  private readonly log: Logger;
  private readonly flushAt: number;
  private readonly flushIntervalMs: number;
  private readonly maxBuffered: number;
  private consumer: Consumer | undefined;
  private topics: string[];
  private fromStart: Set<string>;
  /** `topic|partition` → the next offset to commit, for the records handled since the last flush. */
  private offsets = new Map<string, { topic: string; partition: number; next: bigint }>();
  private oldestAt: number | undefined;
  private readonly pausedBy = new Set<'store' | 'buffer'>();
  private flushChain: Promise<void> = Promise.resolve();
  /** Commits in flush order; the next flush does not wait for them (a commit queues behind the fetch in flight). */
  private commitChain: Promise<void> = Promise.resolve();
  private queued = 0;
  /** Woken when a flush attempt ends: batch handlers waiting for room in the buffer. */
  private settled: Array<() => void> = [];
  private ticker: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Ends a flush retrying while the store is away, when the consumer stops. */
  private readonly abort = new AbortController();
  /** The old consumer left the group and a new one has yet to join. */
  private rejoinPending = false;
  private readonly counts = { commits: 0, rejoins: 0 };

  constructor(o: FlushConsumerOptions) {
    this.o = o;
    this.log = o.logger;
    this.flushAt = o.flushAt ?? 500;
    this.flushIntervalMs = o.flushIntervalMs ?? 500;
    this.maxBuffered = o.maxBuffered ?? 100 * this.flushAt;
    this.topics = [...o.topics, ...(o.topicsFromStart ?? [])];
    this.fromStart = new Set(o.topicsFromStart ?? []);
  }

  stats(): FlushConsumerStats {
    return { ...this.counts, paused: this.pausedBy.size > 0, topics: [...this.topics] };
  }

  /** True while a flush keeps failing or the buffer is full (fetching is paused). */
  get paused(): boolean {
    return this.pausedBy.size > 0;
  }

  /** True after a rejoin left the group but could not join again (Kafka away): call `rejoin` again. */
  get rejoining(): boolean {
    return this.rejoinPending;
  }

  /** Joins the group; resolves once it has. */
  async start(): Promise<void> {
    await this.join(this.topics);
    this.ticker = setInterval(() => this.maybeFlush(), Math.max(10, Math.min(100, Math.floor(this.flushIntervalMs / 4))));
  }

  /**
   * Follows `topics` (and `topicsFromStart`) from now on: flush, commit, leave, join again.
   * Returns false, changing nothing, while a flush is failing (the flush would fail too); a
   * join that fails (Kafka away) throws, and the next call joins without flushing again.
   */
  async rejoin(topics: string[], topicsFromStart: string[] = []): Promise<boolean> {
    if (this.stopping || !this.consumer || this.paused) return false;
    if (!this.rejoinPending) {
      const old = this.consumer;
      old.pause(this.topics.map((topic) => ({ topic })));
      await this.flushChain.catch(() => undefined);
      await this.flush(1).catch(() => undefined);
      await this.commitChain;
      if (this.paused) {
        // The store is away: retry the flush as usual, and follow the topics once it is back.
        void this.flush().catch(() => undefined);
        return false;
      }
      this.rejoinPending = true;
      await old.disconnect().catch((err) => this.log.warn({ err: (err as Error).message }, 'consumer disconnect failed'));
    }
    if (this.stopping) return false;
    for (const t of topicsFromStart) this.fromStart.add(t);
    try {
      await this.join([...topics, ...topicsFromStart]);
    } catch (err) {
      await this.consumer?.disconnect().catch(() => undefined);
      throw err;
    }
    this.rejoinPending = false;
    this.counts.rejoins++;
    return true;
  }

  /** Stops fetching, stores and commits what is buffered (one attempt: what is not stored is read again by the next owner), leaves. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort(new TurnstreamError(ErrorCodes.ABORTED, 'the consumer is stopping'));
    if (this.ticker) clearInterval(this.ticker);
    try {
      this.consumer?.pause(this.topics.map((topic) => ({ topic })));
    } catch {
      // never ran: nothing is fetched
    }
    await this.flushChain.catch(() => undefined);
    await this.flush(1).catch(() => undefined);
    await this.commitChain;
    await this.consumer?.disconnect().catch((err) => this.log.warn({ err: (err as Error).message }, 'consumer disconnect failed'));
  }

  /** Connects a consumer subscribed to `list` and resolves once it has joined the group. */
  private async join(list: string[]): Promise<void> {
    const c = this.o.kafka.consumer({
      groupId: this.o.groupId,
      readUncommitted: false,
      maxWaitTimeInMs: 100,
      sessionTimeout: this.o.sessionTimeoutMs ?? 30000,
      heartbeatInterval: 3000,
    });
    this.consumer = c;
    this.topics = list;
    const joined = new Promise<void>((resolve) => c.on(c.events.GROUP_JOIN, () => resolve()));
    await c.connect();
    const own = list.filter((t) => !this.fromStart.has(t));
    const fromStart = list.filter((t) => this.fromStart.has(t));
    if (own.length > 0) await c.subscribe({ topics: own, fromBeginning: this.o.fromBeginning ?? true });
    if (fromStart.length > 0) await c.subscribe({ topics: fromStart, fromBeginning: true });
    await c.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: (p) => this.onBatch(p) });
    if (this.paused) c.pause(list.map((topic) => ({ topic })));
    await joined;
  }

  private async onBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    // kafkajs hands over a fetch's batches one after another with only microtasks in between:
    // let I/O run (the flush in flight sends its rows, reads its answer) before each one.
    await new Promise<void>((resolve) => setImmediate(resolve));
    // Resolved = fetched past; committed only once what it became is stored. Marked once per batch.
    let last: string | undefined;
    try {
      for (const m of batch.messages) {
        if (!isRunning() || isStale()) return;
        const waiting = this.o.handle(topic, partition, m);
        if (waiting) await waiting;
        last = m.offset;
      }
    } finally {
      if (last !== undefined) {
        this.cover(topic, partition, last);
        resolveOffset(last);
      }
    }
    await heartbeat();
    // A full buffer with the store working: wait here for flushes, which holds kafkajs' fetching
    // too. Pausing the partitions instead would make kafkajs sleep a whole fetch wait after the
    // resume, however soon the flush is done (100–300 ms each time in `bench sink`).
    while (this.o.buffered() >= this.maxBuffered && !this.pausedBy.has('store') && !this.stopping && isRunning() && !isStale()) {
      this.maybeFlush();
      await this.flushSettledOr(1000);
      await heartbeat();
    }
    // The store failing: fetching pauses until a flush succeeds.
    if (this.o.buffered() >= this.maxBuffered) this.setPaused('buffer', true);
    this.maybeFlush();
  }

  /** Resolves when a flush attempt ends (stored or failed), or after `ms`. */
  private flushSettledOr(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.settled.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private cover(topic: string, partition: number, offset: string): void {
    const k = key(topic, partition);
    const next = BigInt(offset) + 1n;
    const had = this.offsets.get(k);
    if (!had) this.offsets.set(k, { topic, partition, next });
    else if (had.next < next) had.next = next;
    this.oldestAt ??= Date.now();
  }

  private setPaused(reason: 'store' | 'buffer', on: boolean): void {
    const was = this.paused;
    if (on) this.pausedBy.add(reason);
    else this.pausedBy.delete(reason);
    if (was === this.paused) return;
    const list = this.topics.map((topic) => ({ topic }));
    if (this.paused) this.consumer?.pause(list);
    else this.consumer?.resume(list);
    this.o.onPaused?.(this.paused);
    this.log.info({ reason, paused: this.paused }, this.paused ? 'fetching paused' : 'fetching resumed');
  }

  /** Starts a flush when one is due and none is queued; fetching goes on meanwhile. */
  private maybeFlush(): void {
    if (this.queued > 0 || this.stopping || (this.o.buffered() === 0 && this.offsets.size === 0)) return;
    const age = this.oldestAt === undefined ? 0 : Date.now() - this.oldestAt;
    if (this.o.buffered() >= this.flushAt || age >= this.flushIntervalMs) void this.flush().catch(() => undefined);
  }

  /** Serialized: one flush at a time, in order; retried with backoff (fetching paused) until it succeeds or `attempts` run out. */
  private flush(attempts?: number): Promise<void> {
    this.queued++;
    const run = (): Promise<void> =>
      retry(() => this.flushOnce(), {
        attempts,
        baseMs: this.o.retryInitialMs ?? 250,
        maxMs: this.o.retryMaxMs ?? 5000,
        signal: attempts === undefined ? this.abort.signal : undefined,
        retryIf: () => !this.stopping,
        onRetry: (err, attempt) =>
          this.log.warn({ err: (err as Error).message, attempt, buffered: this.o.buffered() }, 'flush failed; retrying with backoff'),
      });
    this.flushChain = this.flushChain.then(run, run).finally(() => void this.queued--);
    return this.flushChain;
  }

  private async flushOnce(): Promise<void> {
    try {
      await this.flushOnceInner();
    } finally {
      for (const wake of this.settled.splice(0)) wake();
    }
  }

  private async flushOnceInner(): Promise<void> {
    if (this.o.buffered() === 0 && this.offsets.size === 0) return;
    // Taken together with the caller's buffer (no await between them).
    const offsets = this.offsets;
    this.offsets = new Map();
    this.oldestAt = undefined;
    try {
      await this.o.flush();
    } catch (err) {
      for (const [k, v] of offsets) {
        const had = this.offsets.get(k);
        if (!had || had.next < v.next) this.offsets.set(k, v);
      }
      this.oldestAt = Date.now();
      this.setPaused('store', true);
      throw err;
    }
    if (this.pausedBy.has('store')) this.log.info('flushing again');
    const list = [...offsets.values()];
    this.commitChain = this.commitChain.then(() => this.commit(list));
    this.setPaused('store', false);
    if (this.o.buffered() < this.maxBuffered) this.setPaused('buffer', false);
  }

  private async commit(list: Array<{ topic: string; partition: number; next: bigint }>): Promise<void> {
    if (list.length === 0) return;
    try {
      if (!this.consumer) throw new Error('no consumer');
      await this.consumer.commitOffsets(list.map(({ topic, partition, next }) => ({ topic, partition, offset: next.toString() })));
      this.counts.commits += list.length;
    } catch (err) {
      // What they cover is stored; a failed commit (a rebalance) only means re-delivery.
      this.log.warn({ err: (err as Error).message }, 'offset commit failed; records will be re-delivered');
    }
  }
}
