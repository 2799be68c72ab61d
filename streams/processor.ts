/**
 * The transactional processor runtime: consume → transform → produce + commit offsets in
 * one Kafka transaction.
 *
 * - Records are handed to a bounded async pool; records with the same key run in order.
 * - When the pool is full the partition that overfilled it is paused, and resumed when
 *   half the pool is free, so a slow handler (a 30 s judge) never blocks the consumer's
 *   heartbeat and never costs a rebalance.
 * - A record's outputs (and its state changes, as changelog records) wait in memory until
 *   every earlier record of its partition has finished; then outputs and offsets commit
 *   together. read_committed consumers downstream see each output exactly once.
 * - A record that cannot be decoded, or whose handler fails for good, becomes a DeadLetter
 *   committed with its offset: the stage moves on and nothing is lost.
 * - The transactional id is `<groupId>.<instanceId>`: a restarted instance fences its dead
 *   predecessor and aborts whatever it left open.
 */
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { TopicId } from '../schemas/index.ts';
import { CoPartitionedAssigner } from './co-partitioned-assigner.ts';
import { deadLetter } from './dead-letter.ts';
import { ErrorCodes, isRetriable, TurnstreamError, createLogger, type Logger, counter, gauge, histogram, retry } from '../core/index.ts';
import type { EventCodecs, TopicValues } from './event-codecs.ts';
import { OffsetTracker } from './offset-tracker.ts';
import { maxValueBytes } from './producer.ts';
import { StateStore } from './state-store.ts';
import { Transactions, type TransactionContent } from './transactions.ts';
import { KeyedWorkPool } from './work-pool.ts';

export interface InputRecord<V = unknown> {
  topicId: TopicId;
  topic: string;
  partition: number;
  offset: string;
  key: string;
  value: V;
  timestamp: number;
  /**
   * Records after this one in its partition when it was fetched (high watermark − offset − 1;
   * transaction markers count, so the last record of a transaction shows 1). > 1 means the
   * consumer is reading a backlog.
   */
  lag: number;
}

export interface StateAccess<S> {
  get(key: string): S | undefined;
  put(key: string, value: S): void;
  delete(key: string): void;
}

type Emit = <K extends TopicId>(id: K, key: string, value: TopicValues[K]) => void;

export interface HandlerContext<S> {
  /** Buffers an output; it is produced in the transaction that commits this record's offset. */
  emit: Emit;
  /** This record's partition's state (writes are staged until the handler succeeds). */
  state: StateAccess<S>;
  logger: Logger;
  /** Aborted when the processor stops. */
  signal: AbortSignal;
}

export interface PunctuateContext<S> {
  emit: Emit;
  state: StateAccess<S> & { entries(): IterableIterator<[string, S]> };
  now: number;
  logger: Logger;
}

export interface ProcessorOptions<S = never> {
  /** Service name, for logs, metrics and dead letters. */
  name: string;
  kafka: Kafka;
  codecs: EventCodecs;
  /** Consumer group; instances with the same group share the partitions. */
  groupId: string;
  /** Stable per instance; part of the transactional id. @default '0' */
  instanceId?: string;
  /** Topics to consume; they must be co-partitioned when `state` is used. */
  inputs: TopicId[];
  /**
   * Records in flight before partitions pause (a batch counts its records). A batch handler makes
   * one call per fetched batch, so its bound is only memory: at 64, one fetched batch paused every
   * partition, and kafkajs then sleeps its whole fetch wait (100 ms) before it looks again;
   * `bench pipeline` went from 3,609–3,797 to 4,184–4,710 turns/s at 4096 (16,384: 3,708–3,931).
   * @default 64 with `handle`, 4096 with `handleBatch`
   */
  concurrency?: number;
  /** Attempts of a record whose handler fails with a retriable error, before it goes to the DLQ. @default 5 */
  maxAttempts?: number;
  /** First retry delay in ms (doubles each time). @default 200 */
  retryBaseMs?: number;
  /** How long finished work waits to be batched into one transaction. @default 20 */
  commitIntervalMs?: number;
  /**
   * Input records in one transaction at most, shared out over the partitions; the rest goes in
   * the next one, right after. A backlog then commits in steps that each become visible
   * downstream, not in one long transaction. 4000 cost no throughput in `bench streams` and cut
   * the longest output stall from 558–830 ms (unbounded) to 475–514 ms; 1000 cut it to
   * 268–302 ms but cost about a third of the throughput. @default 4000
   */
  maxTransactionRecords?: number;
  /** A new group starts from the earliest offset. @default true */
  fromBeginning?: boolean;
  /** Changelog-backed keyed state. */
  state?: { topic: TopicId };
  /** @default 30000 */
  sessionTimeoutMs?: number;
  logger?: Logger;
  /** One record at a time; what it becomes goes out through `ctx.emit`. Give this or `handleBatch`. */
  handle?(record: InputRecord, ctx: HandlerContext<S>): Promise<void>;
  /**
   * The new records of one fetched batch of a partition in one call, in offset order; their
   * outputs and offsets commit in one transaction, never split. A call that fails for good
   * (a non-retriable error) is split: each record is handled alone, and those that still fail
   * are dead-lettered. One that keeps failing with a retriable error dead-letters the batch.
   * Give this or `handle`.
   */
  handleBatch?(records: InputRecord[], ctx: HandlerContext<S>): Promise<void>;
  /** Called when the consumer (re)joins its group, with the partitions it owns now. */
  onAssigned?(partitions: number[]): void;
  /** Periodic work on the state (idle timeouts); its outputs commit in the next transaction. */
  punctuate?: { intervalMs: number; run(ctx: PunctuateContext<S>): Promise<void> };
}

export interface ProcessorStats {
  consumed: number;
  produced: number;
  deadLettered: number;
  committedTransactions: number;
  /** Input records of the largest transaction so far. */
  largestTransaction: number;
  inFlight: number;
  pausedPartitions: number;
  rebalances: number;
}

export interface ProcessorHandle {
  /** Resolves once the group has been joined and the first assignment's state restored. */
  ready: Promise<void>;
  stats(): ProcessorStats;
  /** Stops consuming, finishes (or, after `graceMs`, abandons) work in flight, commits what finished. */
  stop(graceMs?: number): Promise<void>;
  /** Resolves (or rejects) when the processor has stopped, by request or after a fatal error. */
  closed: Promise<void>;
}

interface Output {
  topic: string;
  key: string;
  value: Buffer | null;
}

type Slot = { topic: string; partition: number; tracker: OffsetTracker<Output> };

/** One transaction's content, with what to release once it committed. */
interface Collected extends TransactionContent {
  parts: Array<{ slot: Slot; count: number }>;
  /** How many of `freeOutputs` (from the front) it carries. */
  free: number;
}

const tpKey = (topic: string, partition: number) => `${topic}\u0000${partition}`;

type Message = EachBatchPayload['batch']['messages'][number];

/** Records after `offset` in its partition when it was fetched. */
const lagOf = (highWatermark: string, offset: bigint): number => Math.max(0, Number(BigInt(highWatermark) - offset - 1n));

const metrics = {
  consumed: counter('turnstream_processor_records_in_total', 'Records consumed', ['processor', 'topic']),
  produced: counter('turnstream_processor_records_out_total', 'Records produced', ['processor', 'topic']),
  dlq: counter('turnstream_processor_dead_letters_total', 'Records sent to the DLQ', ['processor', 'code']),
  commits: counter('turnstream_processor_transactions_total', 'Committed transactions', ['processor']),
  inFlight: gauge('turnstream_processor_in_flight', 'Records in flight', ['processor']),
  paused: gauge('turnstream_processor_paused_partitions', 'Partitions paused for backpressure', ['processor']),
  lag: gauge('turnstream_processor_lag', 'Offset lag at the last fetch', ['processor', 'topic', 'partition']),
  handleSeconds: histogram(
    'turnstream_processor_handle_seconds',
    'Handler time per record',
    ['processor'],
    [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
  ),
  commitSeconds: histogram('turnstream_processor_commit_seconds', 'Transaction time', ['processor'], [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5]),
};

export async function runProcessor<S = never>(options: ProcessorOptions<S>): Promise<ProcessorHandle> {
  const rt = new ProcessorRuntime<S>(options);
  await rt.start();
  return rt.handle();
}

class ProcessorRuntime<S> {
  private readonly o: ProcessorOptions<S>;
  private readonly log: Logger;
  private readonly consumer: Consumer;
  private readonly tx: Transactions;
  private readonly pool: KeyedWorkPool;
  private readonly store: StateStore<S> | undefined;
  private readonly trackers = new Map<string, { topic: string; partition: number; tracker: OffsetTracker<Output> }>();
  private readonly paused = new Map<string, { topic: string; partition: number }>();
  private readonly restoring = new Map<number, Promise<void>>();
  private assigned = new Set<number>();
  private freeOutputs: Output[] = [];
  private readonly abort = new AbortController();
  /** Stops a commit that keeps failing (Kafka away) when the processor stops. */
  private readonly commitAbort = new AbortController();
  private commitTimer: NodeJS.Timeout | undefined;
  private punctuateTimer: NodeJS.Timeout | undefined;
  private resumeCheck: NodeJS.Immediate | undefined;
  private commitChain: Promise<void> = Promise.resolve();
  private rebalancing = false;
  private stopping = false;
  private readonly counts = { consumed: 0, produced: 0, deadLettered: 0, committedTransactions: 0, largestTransaction: 0, rebalances: 0 };
  /** This processor's child of the handler-time histogram (a child skips the label lookup per record). */
  private readonly handleTimer: { startTimer(): () => void };
  private readyResolve!: () => void;
  private readonly readyPromise: Promise<void>;
  private closedResolve!: () => void;
  private closedReject!: (e: unknown) => void;
  private readonly closedPromise: Promise<void>;

  constructor(options: ProcessorOptions<S>) {
    if (!options.handle === !options.handleBatch)
      throw new TurnstreamError(ErrorCodes.INTERNAL, `processor ${options.name}: give either handle or handleBatch`);
    this.o = options;
    this.log = options.logger ?? createLogger(options.name);
    this.pool = new KeyedWorkPool(options.concurrency ?? (options.handleBatch ? 4096 : 64));
    this.handleTimer = metrics.handleSeconds.labels({ processor: options.name });
    this.store = options.state ? new StateStore<S>(options.codecs.of(options.state.topic) as never) : undefined;
    this.readyPromise = new Promise((r) => (this.readyResolve = r));
    this.closedPromise = new Promise((res, rej) => {
      this.closedResolve = res;
      this.closedReject = rej;
    });
    this.closedPromise.catch(() => undefined);
    this.consumer = options.kafka.consumer({
      groupId: options.groupId,
      readUncommitted: false,
      sessionTimeout: options.sessionTimeoutMs ?? 30000,
      heartbeatInterval: 3000,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
      partitionAssigners: [CoPartitionedAssigner],
    });
    this.tx = new Transactions({
      kafka: options.kafka,
      transactionalId: `${options.groupId}.${options.instanceId ?? '0'}`,
      logger: this.log,
    });
  }

  handle(): ProcessorHandle {
    return {
      ready: this.readyPromise,
      closed: this.closedPromise,
      stats: () => ({ ...this.counts, inFlight: this.pool.inFlight, pausedPartitions: this.paused.size }),
      stop: (graceMs?: number) => this.stop(graceMs),
    };
  }

  async start(): Promise<void> {
    const { consumer } = this;
    consumer.on(consumer.events.REBALANCING, () => {
      this.rebalancing = true;
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => this.onAssignment(e.payload.memberAssignment));
    consumer.on(consumer.events.CRASH, (e) => {
      // kafkajs restarts the consumer itself on retriable crashes; a non-retriable one ends us.
      if (!e.payload.restart) void this.fail(e.payload.error);
    });
    await this.tx.connect();
    await consumer.connect();
    for (const id of this.o.inputs)
      await consumer.subscribe({ topic: this.o.codecs.topic(id), fromBeginning: this.o.fromBeginning ?? true });
    // autoCommit off: offsets commit only in our transactions. kafkajs would otherwise commit the
    // resolved end of each batch on stop and on rebalance, records still in flight included, and
    // the next owner would skip them.
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: true,
      partitionsConsumedConcurrently: 1,
      eachBatch: (p) => this.onBatch(p),
    });
    if (this.o.punctuate) {
      const { intervalMs } = this.o.punctuate;
      this.punctuateTimer = setInterval(() => void this.runPunctuate(), intervalMs);
    }
  }

  private onAssignment(assignment: Record<string, number[]>): void {
    this.counts.rebalances++;
    const parts = new Set<number>();
    const tps = new Set<string>();
    for (const [topic, ps] of Object.entries(assignment)) {
      for (const p of ps) {
        parts.add(p);
        tps.add(tpKey(topic, p));
      }
    }
    // Work of partitions we lost is abandoned: the new owner re-processes from the last commit.
    for (const [k] of this.trackers) if (!tps.has(k)) this.trackers.delete(k);
    for (const [k] of this.paused) if (!tps.has(k)) this.paused.delete(k);
    const revoked = new Set([...this.assigned].filter((p) => !parts.has(p)));
    const added = new Set([...parts].filter((p) => !this.assigned.has(p)));
    this.assigned = parts;
    if (this.store) {
      this.store.dropPartitions(revoked);
      if (added.size > 0) {
        const store = this.store;
        const t0 = Date.now();
        const restore = store.restore(this.o.kafka, added).then(
          (n) => this.log.info({ partitions: [...added], records: n, ms: Date.now() - t0 }, 'state restored'),
          (err) => void this.fail(err),
        );
        for (const p of added) this.restoring.set(p, restore);
        void restore.finally(() => {
          for (const p of added) if (this.restoring.get(p) === restore) this.restoring.delete(p);
        });
      }
    }
    this.rebalancing = false;
    const partitions = [...parts].sort((a, b) => a - b);
    this.log.info({ partitions }, 'assigned');
    this.o.onAssigned?.(partitions);
    void Promise.all([...this.restoring.values()]).then(() => this.readyResolve());
  }

  private async onBatch({ batch, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    const topicId = this.o.codecs.idOf(topic);
    if (!topicId) throw new TurnstreamError(ErrorCodes.INTERNAL, `no codec for topic ${topic}`);
    const restoring = this.restoring.get(partition);
    if (restoring) {
      // Heartbeat while the partition's state is restored, so the wait costs no rebalance.
      const beat = setInterval(() => void heartbeat().catch(() => undefined), 1000);
      try {
        await restoring;
      } finally {
        clearInterval(beat);
      }
    }
    const k = tpKey(topic, partition);
    let slot = this.trackers.get(k);
    if (!slot) {
      slot = { topic, partition, tracker: new OffsetTracker<Output>() };
      this.trackers.set(k, slot);
    }
    const tracker = slot.tracker;
    metrics.lag.set({ processor: this.o.name, topic, partition: String(partition) }, Number(batch.offsetLag()));
    let consumed = 0;
    const unit: Message[] = [];
    for (const m of batch.messages) {
      if (!isRunning() || isStale() || this.stopping) break;
      const offset = BigInt(m.offset);
      if (tracker.seen(offset)) continue; // fetched again after a rebalance
      consumed++;
      if (this.o.handleBatch) {
        unit.push(m);
        continue;
      }
      tracker.add(offset);
      const key = m.key ? m.key.toString('utf8') : '';
      void this.pool.submit(key, () => this.process(topicId, topic, partition, m, key, tracker, lagOf(batch.highWatermark, offset)));
    }
    if (unit.length > 0) {
      unit.forEach((m, i) => tracker.add(BigInt(m.offset), i === unit.length - 1));
      // One task per batch, in order per partition, weighing its records: the pool's bound holds in
      // records (what is in memory), so a partition pauses once a batch fills it. With state, the
      // batches of every input topic of a partition share its state, so they run one after the
      // other too: two at once would each write the state they read before the other's writes.
      const unitKey = this.store ? `partition ${partition}` : k;
      void this.pool.submit(unitKey, () => this.processBatch(topicId, topic, partition, unit, tracker, batch.highWatermark), unit.length);
    }
    // Metrics per fetched batch, not per record: a labelled update costs as much as a small handler.
    this.counts.consumed += consumed;
    metrics.consumed.inc({ processor: this.o.name, topic }, consumed);
    if (this.pool.full && !this.paused.has(k)) {
      this.paused.set(k, { topic, partition });
      this.consumer.pause([{ topic, partitions: [partition] }]);
      metrics.paused.set({ processor: this.o.name }, this.paused.size);
    }
    metrics.inFlight.set({ processor: this.o.name }, this.pool.inFlight);
  }

  private async process(
    topicId: TopicId,
    topic: string,
    partition: number,
    m: Message,
    key: string,
    tracker: OffsetTracker<Output>,
    lag: number,
  ): Promise<void> {
    const end = this.handleTimer.startTimer();
    const tries = { n: 0 };
    let outputs: Output[];
    try {
      const record = await this.decode(topicId, topic, partition, m, key, lag);
      outputs = await this.attempt([record], tries, tracker);
    } catch (err) {
      outputs = [await this.toDeadLetter(topic, partition, m, err, tries.n)];
    } finally {
      end();
    }
    tracker.complete(BigInt(m.offset), outputs);
    this.afterTask();
  }

  /** A fetched batch through `handleBatch`: one unit of the tracker, committed whole. */
  private async processBatch(
    topicId: TopicId,
    topic: string,
    partition: number,
    messages: Message[],
    tracker: OffsetTracker<Output>,
    highWatermark: string,
  ): Promise<void> {
    const end = this.handleTimer.startTimer();
    const outputs = new Map<Message, Output[]>();
    const records: InputRecord[] = [];
    const messageOf = new Map<InputRecord, Message>();
    for (const m of messages) {
      try {
        const record = await this.decode(
          topicId,
          topic,
          partition,
          m,
          m.key ? m.key.toString('utf8') : '',
          lagOf(highWatermark, BigInt(m.offset)),
        );
        records.push(record);
        messageOf.set(record, m);
      } catch (err) {
        outputs.set(m, [await this.toDeadLetter(topic, partition, m, err, 1)]);
      }
    }
    if (records.length > 0) {
      const tries = { n: 0 };
      try {
        // The batch's outputs ride with its last record; the unit commits whole anyway.
        outputs.set(messageOf.get(records[records.length - 1])!, await this.attempt(records, tries, tracker));
      } catch (err) {
        // Failed for good: find the records to blame, one at a time. Still failing for a
        // retriable reason after every attempt: each would too.
        const alone = records.length > 1 && !isRetriable(err) && !this.stopping;
        for (const r of records) {
          const m = messageOf.get(r)!;
          if (!alone) {
            outputs.set(m, [await this.toDeadLetter(topic, partition, m, err, tries.n)]);
            continue;
          }
          const one = { n: 0 };
          try {
            outputs.set(m, await this.attempt([r], one, tracker));
          } catch (e) {
            outputs.set(m, [await this.toDeadLetter(topic, partition, m, e, one.n)]);
          }
        }
      }
    }
    end();
    for (const m of messages) tracker.complete(BigInt(m.offset), outputs.get(m) ?? []);
    this.afterTask();
  }

  private async decode(topicId: TopicId, topic: string, partition: number, m: Message, key: string, lag: number): Promise<InputRecord> {
    if (m.value === null) throw new TurnstreamError(ErrorCodes.DECODE, 'record has no value (tombstone)', { retriable: false });
    const codec = this.o.codecs.of(topicId);
    const value = codec.decodeNow(m.value) ?? (await codec.decode(m.value));
    return { topicId, topic, partition, offset: m.offset, key, value, timestamp: Number(m.timestamp), lag };
  }

  /**
   * The handler on `records` (one, or a batch for `handleBatch`), retried while its errors are
   * retriable: its outputs, state changelog records included. Its state writes are applied
   * only once it has succeeded, and only while this instance owns the partition.
   */
  private async attempt(records: InputRecord[], tries: { n: number }, tracker: OffsetTracker<Output>): Promise<Output[]> {
    const [first] = records;
    let outputs: Output[] = [];
    let staged = new Map<string, S | undefined>();
    await retry(
      async () => {
        tries.n++;
        outputs = [];
        staged = new Map();
        const emitted: Output[] = [];
        // Encoded as emitted: a value that does not fit its schema fails the handler's call.
        const emit: Emit = (id, k, v) => void emitted.push(this.encode(id, k, v));
        const ctx = { emit, state: this.stateAccess(staged), logger: this.log, signal: this.abort.signal };
        if (this.o.handleBatch) await this.o.handleBatch(records, ctx);
        else await this.o.handle!(first, ctx);
        outputs = emitted;
        if (this.store)
          for (const [sk, sv] of staged)
            outputs.push({ topic: this.store.topic, key: sk, value: sv === undefined ? null : await this.store.encode(sv) });
      },
      {
        attempts: this.o.maxAttempts ?? 5,
        baseMs: this.o.retryBaseMs ?? 200,
        retryIf: (err) => isRetriable(err) && !this.stopping,
        onRetry: (err, attempt) =>
          this.log.warn(
            { err: (err as Error).message, offset: first.offset, records: records.length, partition: first.partition, attempt },
            'handler failed',
          ),
      },
    );
    // An output the broker would refuse would fail every transaction it is in, for ever: the
    // input goes to the DLQ instead (its state writes are dropped with it).
    this.checkSizes(outputs);
    if (this.store && this.trackerStillOwned(first.topic, first.partition, tracker))
      for (const [sk, sv] of staged) this.store.set(sk, first.partition, sv);
    return outputs;
  }

  private async toDeadLetter(topic: string, partition: number, m: Message, err: unknown, attempts: number): Promise<Output> {
    const dl = deadLetter({ topic, partition, offset: m.offset, key: m.key, value: m.value }, err, this.o.name, Math.max(1, attempts));
    this.log.warn({ code: dl.code, reason: dl.message, topic, partition, offset: m.offset }, 'dead-lettered');
    this.counts.deadLettered++;
    metrics.dlq.inc({ processor: this.o.name, code: dl.code });
    return this.encode('dlq', m.key ? m.key.toString('utf8') : '', dl);
  }

  private checkSizes(outputs: Output[]): void {
    for (const o of outputs) {
      const id = this.o.codecs.idOf(o.topic);
      const bytes = o.value?.length ?? 0;
      if (id && bytes > maxValueBytes(id)) {
        throw new TurnstreamError(
          ErrorCodes.TOO_LARGE,
          `its ${o.topic} output (key ${o.key}) is ${bytes} bytes; the topic takes at most ${maxValueBytes(id)}`,
          {
            retriable: false,
          },
        );
      }
    }
  }

  private trackerStillOwned(topic: string, partition: number, tracker: OffsetTracker<Output>): boolean {
    return this.trackers.get(tpKey(topic, partition))?.tracker === tracker;
  }

  private stateAccess(staged: Map<string, S | undefined>): StateAccess<S> {
    const store = this.store;
    if (!store) {
      const none = () => {
        throw new TurnstreamError(ErrorCodes.INTERNAL, `processor ${this.o.name} has no state store`);
      };
      return { get: none, put: none, delete: none };
    }
    return {
      get: (k) => (staged.has(k) ? staged.get(k) : store.get(k)),
      put: (k, v) => void staged.set(k, v),
      delete: (k) => void staged.set(k, undefined),
    };
  }

  private encode<K extends TopicId>(id: K, key: string, value: TopicValues[K]): Output {
    return { topic: this.o.codecs.topic(id), key, value: this.o.codecs.of(id).encodeNow(value) };
  }

  private afterTask(): void {
    // The pool counts a task as in flight until just after it returns, and fast tasks all reach
    // this point before any of them is counted out: decide on resuming once they are.
    if (this.paused.size > 0 && !this.resumeCheck) {
      this.resumeCheck = setImmediate(() => {
        this.resumeCheck = undefined;
        this.maybeResume();
      });
    }
    this.maybeResume();
    this.scheduleCommit();
  }

  private maybeResume(): void {
    if (!this.pool.full && this.paused.size > 0 && this.pool.inFlight <= this.pool.concurrency / 2) {
      const list = [...this.paused.values()];
      this.paused.clear();
      // Resuming what is no longer ours is harmless; kafkajs ignores it.
      this.consumer.resume(list.map(({ topic, partition }) => ({ topic, partitions: [partition] })));
      metrics.paused.set({ processor: this.o.name }, 0);
      metrics.inFlight.set({ processor: this.o.name }, this.pool.inFlight);
    }
  }

  private scheduleCommit(): void {
    if (this.commitTimer) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      this.commitChain = this.commitChain.then(() => this.commit()).catch((err) => this.fail(err));
    }, this.o.commitIntervalMs ?? 20);
  }

  /** Every finished prefix's outputs and offsets, and the outputs of punctuations. */
  private collect(): Collected | null {
    if (this.rebalancing) return null;
    const parts: Collected['parts'] = [];
    const outputs: Output[] = [];
    const offsets = new Map<string, Array<{ partition: number; offset: string }>>();
    const ready = [...this.trackers.values()].filter((s) => s.tracker.committable);
    // The budget shared out fairly; what one partition leaves unused goes to the next.
    let budget = this.o.maxTransactionRecords ?? 4000;
    for (const [i, slot] of ready.entries()) {
      const c = budget > 0 ? slot.tracker.peekCommittable(Math.ceil(budget / (ready.length - i))) : null;
      if (!c) continue;
      budget -= c.count;
      parts.push({ slot, count: c.count });
      outputs.push(...c.outputs);
      const list = offsets.get(slot.topic) ?? [];
      list.push({ partition: slot.partition, offset: c.nextOffset.toString() });
      offsets.set(slot.topic, list);
    }
    const free = this.freeOutputs.length;
    outputs.push(...this.freeOutputs);
    if (parts.length === 0 && free === 0) return null;
    return {
      outputs,
      offsets: { groupId: this.o.groupId, topics: [...offsets].map(([topic, partitions]) => ({ topic, partitions })) },
      parts,
      free,
    };
  }

  /** One transaction with every finished prefix's outputs and offsets, retried until it commits (streams/transactions.ts). */
  private async commit(opts: { attempts?: number } = {}): Promise<void> {
    if (this.rebalancing) {
      this.scheduleCommit();
      return;
    }
    const end = metrics.commitSeconds.startTimer({ processor: this.o.name });
    let done: Collected | null;
    try {
      done = await this.tx.commit(() => this.collect(), {
        signal: opts.attempts ? undefined : this.commitAbort.signal,
        attempts: opts.attempts,
      });
    } finally {
      end();
    }
    if (!done) {
      if (this.rebalancing) this.scheduleCommit();
      return;
    }
    let records = 0;
    for (const p of done.parts) {
      p.slot.tracker.drop(p.count);
      records += p.count;
    }
    this.counts.largestTransaction = Math.max(this.counts.largestTransaction, records);
    this.freeOutputs = this.freeOutputs.slice(done.free);
    const perTopic = new Map<string, number>();
    for (const o of done.outputs) perTopic.set(o.topic, (perTopic.get(o.topic) ?? 0) + 1);
    for (const [topic, n] of perTopic) metrics.produced.inc({ processor: this.o.name, topic }, n);
    metrics.inFlight.set({ processor: this.o.name }, this.pool.inFlight);
    this.counts.produced += done.outputs.length;
    this.counts.committedTransactions++;
    metrics.commits.inc({ processor: this.o.name });
    // More may have finished while this transaction ran.
    if (this.freeOutputs.length > 0 || [...this.trackers.values()].some((s) => s.tracker.committable)) this.scheduleCommit();
  }

  private async runPunctuate(): Promise<void> {
    const p = this.o.punctuate;
    if (!p || !this.store || this.stopping || this.rebalancing || this.restoring.size > 0) return;
    const store = this.store;
    const owned = new Set(this.assigned);
    const staged = new Map<string, S | undefined>();
    const outs: Output[] = [];
    const access = this.stateAccess(staged);
    try {
      await p.run({
        emit: (id, k, v) => void outs.push(this.encode(id, k, v)),
        state: {
          ...access,
          entries: function* () {
            for (const [k, v] of store.entriesOf(owned)) yield [k, staged.has(k) ? (staged.get(k) as S) : v] as [string, S];
          },
        },
        now: Date.now(),
        logger: this.log,
      });
      for (const [k, v] of staged) {
        const partition = store.partitionOf(k);
        if (partition === undefined || !this.assigned.has(partition)) continue;
        outs.push({ topic: store.topic, key: k, value: v === undefined ? null : await store.encode(v) });
        store.set(k, partition, v);
      }
      if (outs.length > 0) {
        this.freeOutputs.push(...outs);
        this.scheduleCommit();
      }
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'punctuate failed');
    }
  }

  private async fail(err: unknown): Promise<void> {
    if (this.stopping) return;
    this.log.error({ err: (err as Error)?.message ?? String(err) }, 'processor failed; stopping');
    await this.shutdown(0).catch(() => undefined);
    this.closedReject(err);
  }

  private async stop(graceMs = 10000): Promise<void> {
    if (this.stopping) return this.closedPromise;
    await this.shutdown(graceMs);
    this.closedResolve();
  }

  private async shutdown(graceMs: number): Promise<void> {
    this.stopping = true;
    if (this.punctuateTimer) clearInterval(this.punctuateTimer);
    if (this.resumeCheck) clearImmediate(this.resumeCheck);
    await this.consumer.stop().catch(() => undefined);
    const drained = await Promise.race([
      this.pool.drain().then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), graceMs)),
    ]);
    if (!drained) this.abort.abort();
    if (this.commitTimer) {
      clearTimeout(this.commitTimer);
      this.commitTimer = undefined;
    }
    // A commit retrying while Kafka is away gives up after the grace period; what it held is
    // processed again by whoever owns the partitions next (nothing was committed).
    const giveUp = setTimeout(() => this.commitAbort.abort(new TurnstreamError(ErrorCodes.ABORTED, 'the processor is stopping')), graceMs);
    await this.commitChain.catch(() => undefined);
    clearTimeout(giveUp);
    if (!this.commitAbort.signal.aborted) {
      await this.commit({ attempts: 3 }).catch((err) => this.log.warn({ err: (err as Error).message }, 'final commit failed'));
    }
    await this.consumer.disconnect().catch(() => undefined);
    await this.tx.disconnect();
  }
}
