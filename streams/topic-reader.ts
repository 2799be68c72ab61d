/**
 * Reads a topic from the beginning to its current end (read_committed), once. Used to
 * restore changelog-backed state and to look at what a topic holds. kafkajs has no manual
 * partition assignment, so this joins a throwaway consumer group and deletes it after.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';

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
   * Stop after this long with nothing fetched and nothing in hand, once joined. Only a partition
   * whose end is an open transaction needs it: commit markers count as read.
   * @default 5000
   */
  idleMs?: number;
  /** Give up after this long. @default 120000 */
  timeoutMs?: number;
}

export async function readToEnd(
  kafka: Kafka,
  topic: string,
  onRecord: (r: RawRecord) => void | Promise<void>,
  options: ReadToEndOptions = {},
): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  let targets: Map<number, bigint>;
  let others: number[];
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    others = offsets.map((o) => o.partition).filter((p) => options.partitions && !options.partitions.has(p));
    targets = new Map(
      offsets
        .filter((o) => (!options.partitions || options.partitions.has(o.partition)) && BigInt(o.high) > BigInt(o.low))
        .map((o) => {
          const high = BigInt(o.high);
          const until = options.until?.get(o.partition);
          return [o.partition, until !== undefined && until < high ? until : high] as [number, bigint];
        })
        .filter(([p, end]) => end > BigInt(offsets.find((o) => o.partition === p)!.low)),
    );
  } finally {
    await admin.disconnect();
  }
  if (targets.size === 0) return 0;

  const groupId = `turnstream-reader-${randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    readUncommitted: false,
    maxWaitTimeInMs: 100,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
  });
  const seen = new Map<number, bigint>();
  let count = 0;
  let lastProgress = Date.now();
  let joined = false;
  let inHand = 0;
  const done = () => [...targets].every(([p, high]) => (seen.get(p) ?? -1n) >= high - 1n);
  const advance = (partition: number, offset: string) => {
    const last = BigInt(offset);
    if (last > (seen.get(partition) ?? -1n)) seen.set(partition, last);
    lastProgress = Date.now();
  };
  consumer.on(consumer.events.GROUP_JOIN, () => {
    joined = true;
    lastProgress = Date.now();
  });
  // kafkajs never hands a batch of only commit markers to eachBatch, but reports it here:
  // without it a transactional topic would look unfinished until the idle fallback.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic === topic) advance(payload.partition, payload.lastOffset);
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        const end = targets.get(batch.partition);
        if (end === undefined) return;
        inHand++;
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
            count++;
          }
          advance(batch.partition, batch.lastOffset());
        } finally {
          inHand--;
        }
      },
    });
    // The throwaway group owns every partition; fetch only the ones asked for.
    if (others.length > 0) consumer.pause([{ topic, partitions: others }]);
    const started = Date.now();
    const idleMs = options.idleMs ?? 5000;
    const timeoutMs = options.timeoutMs ?? 120000;
    while (!done()) {
      if (inHand > 0) lastProgress = Date.now();
      else if (joined && Date.now() - lastProgress > idleMs) break;
      if (Date.now() - started > timeoutMs) throw new Error(`reading ${topic} to its end took over ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    await consumer.disconnect();
    const a = kafka.admin();
    await a.connect();
    await a.deleteGroups([groupId]).catch(() => undefined);
    await a.disconnect();
  }
  return count;
}
