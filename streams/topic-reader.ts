/**
 * Reads a topic from the beginning to its current end (read_committed), once. Used to
 * restore changelog-backed state and to look at what a topic holds. kafkajs has no manual
 * partition assignment, so this joins a throwaway consumer group and deletes it after.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, EachBatchHandler, Kafka } from 'kafkajs';

export interface RawRecord {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
}

export interface ReadToEndOptions {
  /** Only these partitions. @default all */
  partitions?: ReadonlySet<number>;
  /** Per partition, stop below this offset (e.g. a group's committed offsets). @default the end */
  until?: ReadonlyMap<number, bigint>;
  /**
   * Per partition, start at this offset instead of the beginning (e.g. the offsets of a time).
   * Records before it may still be handed over (kafkajs fetches before a seek applies). @default the beginning
   */
  from?: ReadonlyMap<number, bigint>;
  /** Checked as records arrive: true ends the read early (what was wanted is in hand). @default never */
  stopWhen?: () => boolean;
  /**
   * Stop after this long with nothing fetched and nothing in hand, once joined. Only a partition
   * whose end is an open transaction needs it: commit markers count as read.
   * @default 5000
   */
  idleMs?: number;
  /** Give up after this long. @default 120000 */
  timeoutMs?: number;
}

/** The partitions a read covers: per partition the offset it stops below, and the ones to pause. */
interface ReadPlan {
  targets: Map<number, bigint>;
  others: number[];
}

/** Where a read stands, shared by the consumer's callbacks and the wait for its end. */
interface ReadProgress {
  readonly plan: ReadPlan;
  /** Per partition, the last offset read (a record or a commit marker). */
  readonly seen: Map<number, bigint>;
  count: number;
  lastProgress: number;
  joined: boolean;
  /** Batches being handed to onRecord now. */
  inHand: number;
}

/**
 * Reads `topic` from its start to the end it has now (or `options.until`), handing each record
 * to `onRecord` in partition order.
 * @returns how many records were handed over
 */
export async function readToEnd(
  kafka: Kafka,
  topic: string,
  onRecord: (r: RawRecord) => void | Promise<void>,
  options: ReadToEndOptions = {},
): Promise<number> {
  const plan = await planRead(kafka, topic, options);
  if (plan.targets.size === 0) return 0;

  const groupId = `turnstream-reader-${randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    readUncommitted: false,
    maxWaitTimeInMs: 100,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
  });
  const progress: ReadProgress = {
    plan,
    seen: new Map(),
    count: 0,
    lastProgress: Date.now(),
    joined: false,
    inHand: 0,
  };
  watchProgress(consumer, topic, progress);
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachBatch: batchReader(topic, progress, onRecord) });
    // Applied before the first fetch of each partition (kafkajs drops what a fetch brought meanwhile).
    for (const [partition, offset] of options.from ?? []) {
      if (plan.targets.has(partition)) consumer.seek({ topic, partition, offset: offset.toString() });
    }
    // The throwaway group owns every partition; fetch only the ones with something to read.
    if (plan.others.length > 0) consumer.pause([{ topic, partitions: plan.others }]);
    await waitUntilRead(topic, progress, options);
  } finally {
    await consumer.disconnect();
    await deleteGroup(kafka, groupId);
  }
  return progress.count;
}

/** Asks the topic's offsets which partitions hold something to read, and up to where. */
async function planRead(kafka: Kafka, topic: string, options: ReadToEndOptions): Promise<ReadPlan> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    const targets = new Map(
      offsets
        .filter((o) => (!options.partitions || options.partitions.has(o.partition)) && BigInt(o.high) > BigInt(o.low))
        .map((o) => {
          const high = BigInt(o.high);
          const until = options.until?.get(o.partition);
          return [o.partition, until !== undefined && until < high ? until : high] as [number, bigint];
        })
        .filter(([p, end]) => {
          const low = BigInt(offsets.find((o) => o.partition === p)!.low);
          const from = options.from?.get(p);
          return end > (from !== undefined && from > low ? from : low);
        }),
    );
    // Nothing to read in the others (not asked for, empty, or starting at their end): not fetched.
    const others = offsets.map((o) => o.partition).filter((p) => !targets.has(p));
    return { targets, others };
  } finally {
    await admin.disconnect();
  }
}

function advance(progress: ReadProgress, partition: number, offset: string): void {
  const last = BigInt(offset);
  if (last > (progress.seen.get(partition) ?? -1n)) progress.seen.set(partition, last);
  progress.lastProgress = Date.now();
}

function isDone(progress: ReadProgress): boolean {
  return [...progress.plan.targets].every(([p, high]) => (progress.seen.get(p) ?? -1n) >= high - 1n);
}

function watchProgress(consumer: Consumer, topic: string, progress: ReadProgress): void {
  consumer.on(consumer.events.GROUP_JOIN, () => {
    progress.joined = true;
    progress.lastProgress = Date.now();
  });
  // kafkajs never hands a batch of only commit markers to eachBatch, but reports it here:
  // without it a transactional topic would look unfinished until the idle fallback.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic === topic) advance(progress, payload.partition, payload.lastOffset);
  });
}

/** The eachBatch handler: hands over each record below its partition's end. */
function batchReader(topic: string, progress: ReadProgress, onRecord: (r: RawRecord) => void | Promise<void>): EachBatchHandler {
  return async ({ batch }) => {
    const end = progress.plan.targets.get(batch.partition);
    if (end === undefined) return;
    progress.inHand++;
    try {
      for (const m of batch.messages) {
        if (BigInt(m.offset) >= end) break;
        await onRecord({
          topic,
          partition: batch.partition,
          offset: m.offset,
          key: m.key,
          value: m.value,
          timestamp: Number(m.timestamp),
        });
        progress.count++;
      }
      advance(progress, batch.partition, batch.lastOffset());
    } finally {
      progress.inHand--;
    }
  };
}

/** Polls until every partition is read to its end, the read has idled out, or it timed out. */
async function waitUntilRead(topic: string, progress: ReadProgress, options: ReadToEndOptions): Promise<void> {
  const started = Date.now();
  const idleMs = options.idleMs ?? 5000;
  const timeoutMs = options.timeoutMs ?? 120000;
  while (!isDone(progress) && !options.stopWhen?.()) {
    if (progress.inHand > 0) progress.lastProgress = Date.now();
    else if (progress.joined && Date.now() - progress.lastProgress > idleMs) break;
    if (Date.now() - started > timeoutMs) throw new Error(`reading ${topic} to its end took over ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function deleteGroup(kafka: Kafka, groupId: string): Promise<void> {
  const a = kafka.admin();
  await a.connect();
  await a.deleteGroups([groupId]).catch(() => undefined);
  await a.disconnect();
}
