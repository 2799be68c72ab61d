/**
 * "Publish, then commit": the consumer group of a stage that turns many records into one
 * output at a time and publishes it in ONE Kafka transaction with the offsets of the records it
 * used (the learner: a weight version and the samples it was trained on).
 *
 * Records need not be used in offset order (the learner's per-user cap keeps an early sample
 * buffered while later ones train). So each partition's committed offset stops at its oldest
 * record still pending, and the records above it already used travel as the commit's metadata;
 * after a restart or a rebalance they are skipped, as is anything fetched again.
 *
 * The group has ONE member (the learner of a model): its one transaction spans every partition,
 * so it cannot be fenced by partition as the processor runtime is. The transactional id is the
 * group's, `<groupId>`, and is claimed before the group's offsets are read: a second member,
 * or a restart on another host under another instance id, aborts and fences the first one's
 * open transaction, and whatever the first one then tries to commit fails.
 */
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Logger } from '../core/index.ts';
import { Transactions, type TransactionOutput } from './transactions.ts';

export interface PublishConsumerOptions {
  kafka: Kafka;
  groupId: string;
  /** Names this member in logs; not part of the transactional id (the group's one member takes the group's). @default '0' */
  instanceId?: string;
  topic: string;
  logger: Logger;
  /** @default 200 */
  maxWaitTimeInMs?: number;
  /** @default 30000 */
  sessionTimeoutMs?: number;
  /** Each new record of an owned partition, in offset order (fetching waits for a promise). Mark it `done` once used (or refused). */
  handle(partition: number, message: KafkaMessage, offset: bigint): void | Promise<void>;
  /** After each fetched batch (backpressure: `pause`). */
  afterBatch?(): void;
  /** The partitions owned now (after a rebalance: forget what was buffered of the others). */
  onAssigned?(partitions: number[]): void;
  /** Records handled and not used yet (buffered): their partitions' commits stop at the oldest. */
  pending(): Iterable<{ partition: number; offset: bigint }>;
  /** kafkajs gave up on the consumer. */
  onCrash?(err: Error): void;
}

interface PartitionState {
  /** The last offset handed to `handle`; anything at or below it fetched again is skipped. */
  lastSeen: bigint | null;
  /** Offsets used (or refused) above the committed one, not committed yet. */
  done: Set<bigint>;
}

export class PublishConsumer {
  private readonly o: PublishConsumerOptions;
  private readonly tx: Transactions;
  private consumer: Consumer | undefined;
  private readonly parts = new Map<number, PartitionState>();
  private assignment: Promise<void> = Promise.resolve();
  private paused = false;

  constructor(o: PublishConsumerOptions) {
    this.o = { ...o, logger: o.logger.child({ instance: o.instanceId ?? '0' }) };
    this.tx = new Transactions({ kafka: o.kafka, transactionalId: o.groupId, logger: this.o.logger });
  }

  /** True when the last commit failed without knowing whether it committed. */
  get inDoubt(): boolean {
    return this.tx.inDoubt;
  }

  async start(): Promise<void> {
    await this.tx.connect();
    // Before the group's offsets are read: a predecessor's open transaction is aborted and it is fenced.
    await this.tx.claim();
    const c = this.o.kafka.consumer({
      groupId: this.o.groupId,
      readUncommitted: false,
      maxWaitTimeInMs: this.o.maxWaitTimeInMs ?? 200,
      sessionTimeout: this.o.sessionTimeoutMs ?? 30000,
      heartbeatInterval: 3000,
    });
    this.consumer = c;
    c.on(c.events.GROUP_JOIN, (e) => {
      this.assignment = this.onAssignment(e.payload.memberAssignment[this.o.topic] ?? []);
    });
    c.on(c.events.CRASH, (e) => {
      if (!e.payload.restart) this.o.onCrash?.(e.payload.error);
    });
    await c.connect();
    await c.subscribe({ topic: this.o.topic, fromBeginning: true });
    await c.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        await this.assignment;
        const st = this.parts.get(batch.partition);
        if (!st) return;
        for (const m of batch.messages) {
          const offset = BigInt(m.offset);
          if (st.lastSeen !== null && offset <= st.lastSeen) continue; // fetched again after a rebalance
          st.lastSeen = offset;
          if (st.done.has(offset)) continue; // used before a restart (commit metadata)
          const waiting = this.o.handle(batch.partition, m, offset);
          if (waiting) await waiting;
        }
        this.o.afterBatch?.();
      },
    });
  }

  /** Marks a record used (or refused): it is committed with the next transaction. */
  done(partition: number, offset: bigint): void {
    this.parts.get(partition)?.done.add(offset);
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.consumer?.pause([{ topic: this.o.topic }]);
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.consumer?.resume([{ topic: this.o.topic }]);
  }

  /**
   * One transaction: `outputs` and every owned partition's offsets (the oldest pending record,
   * the used ones above it as metadata). Retried (CONCURRENT_TRANSACTIONS, Kafka away) until it
   * commits or `signal` aborts it.
   */
  async commit(outputs: TransactionOutput[], signal?: AbortSignal): Promise<void> {
    const offsets: Array<{ partition: number; offset: string; metadata: string }> = [];
    const oldest = new Map<number, bigint>();
    for (const p of this.o.pending()) {
      const had = oldest.get(p.partition);
      if (had === undefined || p.offset < had) oldest.set(p.partition, p.offset);
    }
    for (const [partition, st] of this.parts) {
      if (st.lastSeen === null) continue;
      let next = st.lastSeen + 1n;
      const pending = oldest.get(partition);
      if (pending !== undefined && pending < next) next = pending;
      for (const o of [...st.done]) if (o < next) st.done.delete(o);
      offsets.push({ partition, offset: next.toString(), metadata: JSON.stringify({ done: [...st.done].map(String) }) });
    }
    const content = {
      outputs,
      offsets: offsets.length > 0 ? { groupId: this.o.groupId, topics: [{ topic: this.o.topic, partitions: offsets }] } : undefined,
    };
    await this.tx.commit(() => content, { signal });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
    await this.tx.disconnect();
  }

  /** (Re)assignment: forget lost partitions; read committed offsets and their metadata for ours. */
  private async onAssignment(partitions: number[]): Promise<void> {
    const mine = new Set(partitions);
    for (const p of [...this.parts.keys()]) if (!mine.has(p)) this.parts.delete(p);
    this.o.onAssigned?.(partitions);
    const admin = this.o.kafka.admin();
    await admin.connect();
    try {
      const [res] = await admin.fetchOffsets({ groupId: this.o.groupId, topics: [this.o.topic] });
      for (const p of res?.partitions ?? []) {
        if (!mine.has(p.partition)) continue;
        const done = new Set<bigint>();
        try {
          for (const o of (p.metadata ? (JSON.parse(p.metadata) as { done?: string[] }).done : undefined) ?? []) done.add(BigInt(o));
        } catch {
          this.o.logger.warn({ partition: p.partition, metadata: p.metadata }, 'unreadable commit metadata; ignoring it');
        }
        const committed = BigInt(p.offset);
        // Buffered records survive a rebalance that keeps the partition: keep its position.
        const prev = this.parts.get(p.partition);
        this.parts.set(p.partition, prev ?? { lastSeen: committed >= 0n ? committed - 1n : null, done });
      }
      for (const p of partitions) if (!this.parts.has(p)) this.parts.set(p, { lastSeen: null, done: new Set() });
    } finally {
      await admin.disconnect();
    }
    this.o.logger.info({ partitions }, 'assigned');
  }
}
