/**
 * The one way turnstream commits a Kafka transaction (outputs + consumed offsets), used by the
 * processor runtime and the learner: an attempt that fails is aborted and retried with backoff
 * until it commits, so Kafka's CONCURRENT_TRANSACTIONS (51, "a transaction follows the previous
 * one too closely"), a broker restart or a minute-long outage cost time, never the service.
 *
 * - Each attempt asks `build` for its content afresh (a processor adds what finished meanwhile).
 * - After an attempt that leaves the producer in doubt (its abort failed, or the commit itself
 *   got no answer) the producer is replaced: a new one with the same transactional id makes the
 *   coordinator finish or abort what the old one left open before it is used.
 * - A commit that got no answer may have landed: the group's committed offsets say whether it
 *   did (they moved to the attempt's offsets). If it did, the content counts as committed; if
 *   that cannot be told, the error is fatal, and a restart resumes from the committed offsets,
 *   which is exact either way.
 * - Fencing (another instance took the transactional id) is never retried: the caller decides
 *   (`wasFenced`); a processor whose partition moved drops that partition's work.
 * - `claim` takes the transactional id before the caller reads a group's committed offsets:
 *   kafkajs would take it only at the first transaction, and a predecessor's transaction could
 *   still commit in between.
 */
import type { Kafka, Message, Producer, RecordMetadata } from 'kafkajs';
import { ErrorCodes, TurnstreamError, type Logger, counter, retry } from '../core/index.ts';
import { chunksOf, kafkaErrorType, MAX_SEND_BYTES, partitioner } from './producer.ts';

export interface TransactionOutput {
  topic: string;
  key: string;
  value: Buffer | null;
}

export interface TransactionOffsets {
  groupId: string;
  topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string; metadata?: string | null }> }>;
}

/** What one transaction writes: outputs and (usually) the consumed offsets. */
export interface TransactionContent {
  outputs: TransactionOutput[];
  offsets?: TransactionOffsets;
}

export interface TransactionsOptions {
  kafka: Kafka;
  transactionalId: string;
  logger: Logger;
  /** First delay after a failed attempt; doubles. @default 200 */
  retryBaseMs?: number;
  /** Longest delay between attempts. @default 5000 */
  retryMaxMs?: number;
  /** @default 60000 */
  transactionTimeoutMs?: number;
}

const retries = counter(
  'turnstream_transaction_retries_total',
  'Transaction attempts that failed and were retried, by Kafka error (or the phase that failed)',
  ['reason'],
);

/** The producer was fenced: another instance runs with our transactional id. */
const FENCED = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

/**
 * The broker and the producer no longer agree on the producer's sequence numbers (a leader lost
 * mid-send, a send whose answer was lost): the producer never recovers by itself, only a new
 * producer id starts them again (seen on three brokers with two killed: 80 attempts in a row).
 */
const PRODUCER_STATE_LOST = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_ID_MAPPING']);

export function isFenced(err: unknown): boolean {
  const type = kafkaErrorType(err);
  const name = (err as { name?: string })?.name ?? '';
  return (type !== undefined && FENCED.has(type)) || /ProducerFenced/i.test(name);
}

/** A commit failed because another producer took our transactional id (the error `commit` throws then). */
export function wasFenced(err: unknown): boolean {
  return isFenced(err) || isFenced((err as { cause?: unknown } | undefined)?.cause);
}

const sameOffsets = (a: string | undefined, b: string): boolean => a !== undefined && BigInt(a) === BigInt(b);

export class Transactions {
  private producer: Producer;
  /** The producer may hold an open or unfinished transaction: replace it before the next attempt. */
  private stale = false;
  /** Content whose commit got no answer: it may have landed. */
  private unanswered: TransactionContent | null = null;
  /** The offsets of our last commit, per group/topic/partition. */
  private readonly committed = new Map<string, string>();
  /** Per topic and partition, the first offset of the last record batch a committed transaction wrote. */
  private readonly written = new Map<string, Map<number, bigint>>();
  private readonly o: TransactionsOptions;

  constructor(options: TransactionsOptions) {
    this.o = options;
    this.producer = this.create();
  }

  private create(): Producer {
    return this.o.kafka.producer({
      transactionalId: this.o.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: partitioner,
      transactionTimeout: this.o.transactionTimeoutMs ?? 60000,
    });
  }

  /** Connects (the id is taken by `claim` or the first transaction). */
  async connect(): Promise<void> {
    await this.producer.connect();
  }

  get transactionalId(): string {
    return this.o.transactionalId;
  }

  /**
   * Takes the transactional id now: the coordinator aborts the transaction an earlier holder of
   * the id left open (or finishes the one it was committing) and fences that holder; kafkajs's
   * InitProducerId waits until that is done. Committed offsets read after this are final: nothing
   * of the earlier holder can commit any more.
   */
  async claim(): Promise<void> {
    // kafkajs initialises the transactional producer id at its first transaction; one that sent
    // nothing ends without an EndTxn.
    const t = await this.producer.transaction();
    await t.abort();
  }

  /** A commit got no answer and is not settled yet (its outputs may or may not be in the log). */
  get inDoubt(): boolean {
    return this.unanswered !== null;
  }

  /**
   * Waits until every committed output is readable with read_committed. A commit returns
   * before Kafka writes its markers, so a reader that starts at once may stop short of it.
   * @throws TurnstreamError (UNAVAILABLE) when that takes longer than `timeoutMs`
   */
  async awaitVisible(timeoutMs = 30_000): Promise<void> {
    if (this.written.size === 0) return;
    const admin = this.o.kafka.admin();
    await admin.connect();
    try {
      await retry(
        async () => {
          for (const [topic, parts] of this.written) {
            // The admin lists offsets read_committed: `high` is the last stable offset.
            const ends = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
            for (const [partition, offset] of parts)
              if ((ends.get(partition) ?? -1n) <= offset)
                throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `${topic}[${partition}] is not readable up to offset ${offset} yet`, {
                  retriable: true,
                });
          }
        },
        { baseMs: 20, maxMs: 200, maxTimeMs: timeoutMs },
      );
    } finally {
      await admin.disconnect();
    }
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined);
  }

  /**
   * Commits what `build` returns (null or empty: nothing to do) in one transaction, retrying
   * until it commits, `signal` aborts, or `attempts` run out. Resolves with the content that
   * committed (the caller's own fields kept), or null.
   * @throws TurnstreamError not retriable when fenced or when a commit's outcome cannot be told
   */
  async commit<T extends TransactionContent>(
    build: () => T | null | Promise<T | null>,
    opts: { signal?: AbortSignal; attempts?: number } = {},
  ): Promise<T | null> {
    return retry(
      async () => {
        if (this.unanswered) {
          const landed = await this.settleUnanswered();
          if (landed) return landed as T;
        }
        if (this.stale) await this.reset();
        const content = await build();
        if (!content || (content.outputs.length === 0 && !content.offsets?.topics.length)) return null;
        await this.attempt(content);
        return content;
      },
      {
        attempts: opts.attempts,
        baseMs: this.o.retryBaseMs ?? 200,
        maxMs: this.o.retryMaxMs ?? 5000,
        signal: opts.signal,
        // Kafka's own errors are retried whatever kafkajs says of them; only ours may say no.
        retryIf: (err) => !(err instanceof TurnstreamError && !err.retriable),
        onRetry: (err, attempt) => {
          retries.inc({ reason: kafkaErrorType(err) ?? (err as TurnstreamError).param ?? 'other' });
          const log = attempt >= 3 ? this.o.logger.warn.bind(this.o.logger) : this.o.logger.debug.bind(this.o.logger);
          log({ err: (err as Error).message, attempt }, 'transaction failed; retrying');
        },
      },
    );
  }

  private async attempt(content: TransactionContent): Promise<void> {
    let phase: 'begin' | 'send' | 'offsets' | 'commit' = 'begin';
    let txn: Awaited<ReturnType<Producer['transaction']>> | undefined;
    try {
      txn = await this.producer.transaction();
      phase = 'send';
      const sent: RecordMetadata[] = [];
      // Several sends of bounded size: one record batch stays well under the topics' limits.
      for (const chunk of chunksOf(content.outputs, (o) => (o.value?.length ?? 0) + Buffer.byteLength(o.key) + 70, MAX_SEND_BYTES)) {
        const byTopic = new Map<string, Message[]>();
        for (const o of chunk) {
          const list = byTopic.get(o.topic) ?? [];
          list.push({ key: o.key, value: o.value });
          byTopic.set(o.topic, list);
        }
        sent.push(...(await txn.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) })));
      }
      if (content.offsets?.topics.length) {
        phase = 'offsets';
        await txn.sendOffsets({ consumerGroupId: content.offsets.groupId, topics: content.offsets.topics });
      }
      phase = 'commit';
      await txn.commit();
      this.remember(content);
      for (const m of sent) {
        const parts = this.written.get(m.topicName) ?? new Map<number, bigint>();
        const offset = BigInt(m.baseOffset ?? '-1');
        if (offset > (parts.get(m.partition) ?? -1n)) parts.set(m.partition, offset);
        this.written.set(m.topicName, parts);
      }
    } catch (err) {
      if (isFenced(err)) {
        throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `fenced: another instance runs with transactional id ${this.o.transactionalId}`, {
          cause: err,
          retriable: false,
        });
      }
      // A broker that answered the commit with an error did not commit; no answer may mean either.
      if (phase === 'commit' && kafkaErrorType(err) === undefined) {
        this.unanswered = content;
        this.stale = true;
      } else if (txn) {
        await txn.abort().catch(() => (this.stale = true));
      } else {
        this.stale = true;
      }
      if (PRODUCER_STATE_LOST.has(kafkaErrorType(err) ?? '')) this.stale = true;
      // `param` names the failed phase for the retry metric when Kafka gave no error type.
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `transaction failed (${phase}): ${(err as Error).message}`, {
        cause: err,
        param: phase,
      });
    }
  }

  /** A fresh producer with the same transactional id: the coordinator settles what the old one left. */
  private async reset(): Promise<void> {
    const old = this.producer;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([old.disconnect().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer);
    this.producer = this.create();
    await this.producer.connect();
    this.stale = false;
    this.o.logger.info({ transactionalId: this.o.transactionalId }, 'transactional producer replaced');
  }

  /**
   * Whether the unanswered commit landed: its offsets are the group's committed offsets now
   * (read after the reset, which settles the transaction). Returns its content if it did.
   */
  private async settleUnanswered(): Promise<TransactionContent | null> {
    const content = this.unanswered!;
    if (this.stale) await this.reset();
    const offsets = content.offsets;
    const parts = offsets?.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, ...p }))) ?? [];
    const distinct = parts.some((p) => this.committed.get(`${offsets!.groupId}\u0000${p.topic}\u0000${p.partition}`) !== p.offset);
    if (!offsets || parts.length === 0 || !distinct) {
      throw new TurnstreamError(
        ErrorCodes.UNAVAILABLE,
        'a transaction commit got no answer and its outcome cannot be told from the offsets; restart to resume from what is committed',
        { retriable: false },
      );
    }
    // The transaction is settled (InitProducerId waits for that) once the new producer starts one;
    // begin and abort an empty transaction so the committed offsets are final when read.
    const probe = await this.producer.transaction();
    await probe.abort();
    const admin = this.o.kafka.admin();
    await admin.connect();
    let now: Map<string, string>;
    try {
      const res = await admin.fetchOffsets({ groupId: offsets.groupId, topics: offsets.topics.map((t) => t.topic) });
      now = new Map(res.flatMap((t) => t.partitions.map((p) => [`${t.topic}\u0000${p.partition}`, p.offset] as const)));
    } finally {
      await admin.disconnect();
    }
    const landed = parts.map((p) => sameOffsets(now.get(`${p.topic}\u0000${p.partition}`), p.offset));
    this.unanswered = null;
    if (landed.every(Boolean)) {
      this.remember(content);
      this.o.logger.info({ transactionalId: this.o.transactionalId }, 'an unanswered commit had landed');
      return content;
    }
    if (landed.some(Boolean)) {
      throw new TurnstreamError(ErrorCodes.INTERNAL, 'a transaction committed only part of its offsets', { retriable: false });
    }
    return null;
  }

  private remember(content: TransactionContent): void {
    const o = content.offsets;
    if (!o) return;
    for (const t of o.topics)
      for (const p of t.partitions) this.committed.set(`${o.groupId}\u0000${t.topic}\u0000${p.partition}`, p.offset);
  }
}
