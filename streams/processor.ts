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
 * - Fenced by partition, as Kafka Streams' tasks before KIP-447: one transactional producer per
 *   partition NUMBER owned (the co-partitioned inputs' records of that number, its state and the
 *   outputs and dead letters they make share it), transactional id `<groupId>.partition-<n>`.
 *   A new owner claims the id before it reads the partition's committed offsets and state: the
 *   coordinator aborts the transaction the old owner still had open, and fences it, so nothing
 *   of the old owner commits after the new one has read where to start (kafkajs sends no group
 *   generation with the offsets, so KIP-447's fencing is not there). A restarted instance is the
 *   same case.
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
import { Transactions, wasFenced, type TransactionContent } from './transactions.ts';
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
  /** Names this instance in logs (the transactional ids are per partition, not per instance). @default '0' */
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
   * Input records in one transaction at most (one partition's: each has its own), shared out over
   * its input topics; the rest goes in the next one, right after. A backlog then commits in steps
   * that each become visible
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
  /** Called once partitions taken over are claimed and their state restored, before their offsets are set and their first batch is read. */
  onAcquired?(partitions: number[]): void;
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
  /** Transactional producers held now: one per partition owned. */
  producers: number;
  /** Transactions of a partition that moved away, fenced by its new owner (their records are the new owner's). */
  fencedTransactions: number;
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

/** A partition number owned: its transactional producer and its punctuations' outputs waiting to commit. */
interface Task {
  partition: number;
  tx: Transactions;
  free: Output[];
}

/** One transaction's content, with what to release once it committed. */
interface Collected extends TransactionContent {
  parts: Array<{ slot: Slot; count: number }>;
  /** How many of its task's `free` outputs (from the front) it carries. */
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
  fenced: counter(
    'turnstream_processor_fenced_transactions_total',
    'Transactions refused because another instance claimed their partition',
    ['processor'],
  ),
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
  private readonly pool: KeyedWorkPool;
  private readonly store: StateStore<S> | undefined;
  private readonly trackers = new Map<string, { topic: string; partition: number; tracker: OffsetTracker<Output> }>();
  private readonly paused = new Map<string, { topic: string; partition: number }>();
  /** Per partition number owned, its producer; a partition is ready once claimed, restored and positioned (`acquiring`). */
  private readonly tasks = new Map<number, Task>();
  /** Partitions being claimed, restored and positioned; their batches wait. */
  private readonly acquiring = new Map<number, Promise<void>>();
  /** Producers of partitions that moved away, closed once the commit in flight is done. */
  private retired: Transactions[] = [];
  private assigned = new Set<number>();
  private readonly abort = new AbortController();
  /** Stops a commit that keeps failing (Kafka away) when the processor stops. */
  private readonly commitAbort = new AbortController();
  private commitTimer: NodeJS.Timeout | undefined;
  private punctuateTimer: NodeJS.Timeout | undefined;
  private resumeCheck: NodeJS.Immediate | undefined;
  private commitChain: Promise<void> = Promise.resolve();
  private rebalancing = false;
  private stopping = false;
  private readonly counts = {
    consumed: 0,
    produced: 0,
    deadLettered: 0,
    committedTransactions: 0,
    largestTransaction: 0,
    rebalances: 0,
    fencedTransactions: 0,
  };
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
    this.log = (options.logger ?? createLogger(options.name)).child({ instance: options.instanceId ?? '0' });
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
  }

  handle(): ProcessorHandle {
    return {
      ready: this.readyPromise,
      closed: this.closedPromise,
      stats: () => ({ ...this.counts, inFlight: this.pool.inFlight, pausedPartitions: this.paused.size, producers: this.tasks.size }),
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
    this.store?.dropPartitions(revoked);
    for (const p of revoked) this.retire(p);
    if (added.size > 0) this.acquire(added, false);
    this.rebalancing = false;
    // Closes the producers of the partitions that moved away, once no commit uses them.
    if (revoked.size > 0) this.scheduleCommit();
    const partitions = [...parts].sort((a, b) => a - b);
    this.log.info({ partitions }, 'assigned');
    this.o.onAssigned?.(partitions);
    void Promise.all([...this.acquiring.values()]).then(() => this.readyResolve());
  }

  /**
   * Takes partitions over: a producer each, which claims its transactional id (the previous
   * owner's open transaction is aborted and fenced), then their state from the changelog, then
   * the consumer set to their committed offsets, read only now. Their batches wait till then.
   * `lost`: partitions we held all along but whose producer was fenced (the group moved them
   * away and back while we were not looking); the consumer is past their committed offsets.
   */
  private acquire(partitions: ReadonlySet<number>, lost: boolean): void {
    const t0 = Date.now();
    const tasks = [...partitions].map((partition) => {
      const task: Task = {
        partition,
        tx: new Transactions({ kafka: this.o.kafka, transactionalId: `${this.o.groupId}.partition-${partition}`, logger: this.log }),
        free: [],
      };
      this.tasks.set(partition, task);
      return task;
    });
    const work = (async () => {
      await Promise.all(
        tasks.map(async (t) => {
          await t.tx.connect();
          await t.tx.claim();
        }),
      );
      const restored = this.store ? await this.store.restore(this.o.kafka, partitions) : 0;
      // From here the restored state may fall due (idle timeouts): the handler learns of the
      // partitions' unread backlog before the punctuator can look at it.
      this.o.onAcquired?.([...partitions].sort((a, b) => a - b));
      await this.seekCommitted(partitions, lost);
      this.log.info({ partitions: [...partitions], restored, ms: Date.now() - t0 }, 'partitions claimed');
    })().catch((err) => void this.fail(err));
    for (const p of partitions) this.acquiring.set(p, work);
    void work.finally(() => {
      for (const p of partitions) if (this.acquiring.get(p) === work) this.acquiring.delete(p);
    });
  }

  /**
   * Sets the consumer to the committed offsets of `partitions` of every input. kafkajs read them
   * when it joined, maybe before the claim; an old owner's transaction may have committed
   * since. A batch fetched before is stale (`isStale`) and dropped. Where the group has committed
   * nothing yet, only a `lost` partition needs a position: the start of the topic (or its end).
   */
  private async seekCommitted(partitions: ReadonlySet<number>, lost: boolean): Promise<void> {
    const topics = this.o.inputs.map((id) => this.o.codecs.topic(id));
    const admin = this.o.kafka.admin();
    await admin.connect();
    try {
      const committed = await admin.fetchOffsets({ groupId: this.o.groupId, topics });
      for (const { topic, partitions: ps } of committed) {
        const ends = lost ? await admin.fetchTopicOffsets(topic) : [];
        for (const { partition, offset } of ps) {
          if (!partitions.has(partition)) continue;
          let at = BigInt(offset) >= 0n ? offset : undefined;
          if (at === undefined && lost) {
            const end = ends.find((e) => e.partition === partition);
            at = (this.o.fromBeginning ?? true) ? end?.low : end?.high;
          }
          if (at !== undefined && this.assigned.has(partition)) this.consumer.seek({ topic, partition, offset: at });
        }
      }
    } finally {
      await admin.disconnect();
    }
  }

  /** A partition moved away: its producer is closed once the commit in flight, if any, is done. */
  private retire(partition: number): void {
    const task = this.tasks.get(partition);
    if (!task) return;
    this.tasks.delete(partition);
    this.retired.push(task.tx);
    for (const [k, slot] of this.trackers) if (slot.partition === partition) this.trackers.delete(k);
  }

  /**
   * Another instance claimed the transactional id of a partition we own: the group gave it the
   * partition in a generation we missed (our session had expired) and gave it back. What we hold
   * of it is stale; it is taken over again from its committed offsets and state.
   */
  private reacquire(partition: number): void {
    this.log.warn({ partition }, 'fenced on a partition still assigned to us; taking it over again from its committed offsets');
    this.retire(partition);
    this.store?.dropPartitions(new Set([partition]));
    this.acquire(new Set([partition]), true);
  }

  private async onBatch({ batch, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    const topicId = this.o.codecs.idOf(topic);
    if (!topicId) throw new TurnstreamError(ErrorCodes.INTERNAL, `no codec for topic ${topic}`);
    const acquiring = this.acquiring.get(partition);
    if (acquiring) {
      // Heartbeat while the partition is claimed and its state restored, so the wait costs no rebalance.
      const beat = setInterval(() => void heartbeat().catch(() => undefined), 1000);
      try {
        await acquiring;
      } finally {
        clearInterval(beat);
      }
    }
    if (!this.tasks.has(partition)) return; // moved away meanwhile
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

  /** A partition's finished prefixes (of each input topic) with their outputs and offsets, and its punctuations' outputs. */
  private collect(task: Task): Collected | null {
    if (this.rebalancing || this.tasks.get(task.partition) !== task) return null;
    const parts: Collected['parts'] = [];
    const outputs: Output[] = [];
    const offsets: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }> = [];
    const ready = [...this.trackers.values()].filter((s) => s.partition === task.partition && s.tracker.committable);
    // The budget shared out fairly; what one topic leaves unused goes to the next.
    let budget = this.o.maxTransactionRecords ?? 4000;
    for (const [i, slot] of ready.entries()) {
      const c = budget > 0 ? slot.tracker.peekCommittable(Math.ceil(budget / (ready.length - i))) : null;
      if (!c) continue;
      budget -= c.count;
      parts.push({ slot, count: c.count });
      outputs.push(...c.outputs);
      offsets.push({ topic: slot.topic, partitions: [{ partition: slot.partition, offset: c.nextOffset.toString() }] });
    }
    const free = task.free.length;
    outputs.push(...task.free);
    if (parts.length === 0 && free === 0) return null;
    return { outputs, offsets: { groupId: this.o.groupId, topics: offsets }, parts, free };
  }

  /** Whether a partition has something to commit. */
  private pending(task: Task): boolean {
    return task.free.length > 0 || [...this.trackers.values()].some((s) => s.partition === task.partition && s.tracker.committable);
  }

  /**
   * One transaction per partition with something to commit, side by side, each retried until it
   * commits (streams/transactions.ts).
   */
  private async commit(opts: { attempts?: number } = {}): Promise<void> {
    if (this.rebalancing) {
      this.scheduleCommit();
      return;
    }
    try {
      await Promise.all([...this.tasks.values()].filter((t) => this.pending(t)).map((t) => this.commitTask(t, opts)));
    } finally {
      await this.closeRetired();
    }
    // More may have finished while these transactions ran (or a rebalance held them back).
    if (this.rebalancing || [...this.tasks.values()].some((t) => this.pending(t))) this.scheduleCommit();
  }

  private async commitTask(task: Task, opts: { attempts?: number }): Promise<void> {
    const end = metrics.commitSeconds.startTimer({ processor: this.o.name });
    let done: Collected | null;
    try {
      done = await task.tx.commit(() => this.collect(task), {
        signal: opts.attempts ? undefined : this.commitAbort.signal,
        attempts: opts.attempts,
      });
    } catch (err) {
      if (this.tasks.get(task.partition) !== task) {
        // The partition moved while its transaction ran: its records are the new owner's.
        if (wasFenced(err)) this.countFenced();
        this.log.info(
          { partition: task.partition, err: (err as Error).message },
          'transaction of a partition that moved away not committed',
        );
        return;
      }
      if (wasFenced(err) && !this.stopping) {
        this.countFenced();
        this.reacquire(task.partition);
        return;
      }
      throw err;
    } finally {
      end();
    }
    if (!done) return;
    let records = 0;
    for (const p of done.parts) {
      p.slot.tracker.drop(p.count);
      records += p.count;
    }
    this.counts.largestTransaction = Math.max(this.counts.largestTransaction, records);
    task.free = task.free.slice(done.free);
    const perTopic = new Map<string, number>();
    for (const o of done.outputs) perTopic.set(o.topic, (perTopic.get(o.topic) ?? 0) + 1);
    for (const [topic, n] of perTopic) metrics.produced.inc({ processor: this.o.name, topic }, n);
    metrics.inFlight.set({ processor: this.o.name }, this.pool.inFlight);
    this.counts.produced += done.outputs.length;
    this.counts.committedTransactions++;
    metrics.commits.inc({ processor: this.o.name });
  }

  private countFenced(): void {
    this.counts.fencedTransactions++;
    metrics.fenced.inc({ processor: this.o.name });
  }

  /** Closes the producers of partitions that moved away (called between commits: none is in use). */
  private async closeRetired(): Promise<void> {
    const retired = this.retired;
    this.retired = [];
    await Promise.all(retired.map((tx) => tx.disconnect()));
  }

  /** The punctuation, once per partition owned: its outputs go in that partition's next transaction. */
  private async runPunctuate(): Promise<void> {
    const p = this.o.punctuate;
    if (!p || !this.store || this.stopping || this.rebalancing || this.acquiring.size > 0) return;
    const store = this.store;
    let any = false;
    for (const task of [...this.tasks.values()]) {
      const mine = new Set([task.partition]);
      const staged = new Map<string, S | undefined>();
      const outs: Output[] = [];
      const access = this.stateAccess(staged);
      try {
        await p.run({
          emit: (id, k, v) => void outs.push(this.encode(id, k, v)),
          state: {
            ...access,
            entries: function* () {
              for (const [k, v] of store.entriesOf(mine)) yield [k, staged.has(k) ? (staged.get(k) as S) : v] as [string, S];
            },
          },
          now: Date.now(),
          logger: this.log,
        });
        // Moved away meanwhile: the new owner punctuates its state.
        if (this.tasks.get(task.partition) !== task) continue;
        for (const [k, v] of staged) {
          if (store.partitionOf(k) !== task.partition) continue;
          outs.push({ topic: store.topic, key: k, value: v === undefined ? null : await store.encode(v) });
          store.set(k, task.partition, v);
        }
        if (outs.length > 0) {
          task.free.push(...outs);
          any = true;
        }
      } catch (err) {
        this.log.error({ err: (err as Error).message, partition: task.partition }, 'punctuate failed');
      }
    }
    if (any) this.scheduleCommit();
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
    if (this.commitTimer) clearTimeout(this.commitTimer);
    for (const p of [...this.tasks.keys()]) this.retire(p);
    await this.closeRetired();
  }
}
