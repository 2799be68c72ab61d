/**
 * Reads bounded ranges of topics once (read_committed), with a throwaway consumer group pointed
 * at the ranges' starts by seeking (kafkajs has no manual assignment; setting a new group's offsets
 * with the admin client joins it, which takes seconds). A partition is done
 * when the consumer has fetched up to its end, transaction markers included (kafkajs reports
 * those in its batch events, never to `eachBatch`), so no idle wait is needed at the end.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import type { RawRecord } from '../streams/index.ts';
import type { TopicRange } from './replay-range.ts';

export interface ReadRangeOptions {
  /** Give up after this long. @default 600000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const id = (topic: string, p: number) => `${topic}\u0000${p}`;

/** The records read so far (none yet), and for each partition with something to read: its end, position and start. */
function planRead(ranges: TopicRange[]) {
  const out = new Map<string, Map<number, RawRecord[]>>();
  const ends = new Map<string, bigint>();
  const pos = new Map<string, bigint>();
  const starts = new Map<string, bigint>();
  for (const r of ranges) {
    const byPartition = new Map<number, RawRecord[]>();
    out.set(r.topic, byPartition);
    for (const [ps, start] of Object.entries(r.start)) {
      const p = Number(ps);
      byPartition.set(p, []);
      if (BigInt(r.end[p]) > BigInt(start)) {
        ends.set(id(r.topic, p), BigInt(r.end[p]));
        pos.set(id(r.topic, p), BigInt(start));
        starts.set(id(r.topic, p), BigInt(start));
      }
    }
  }
  return { out, ends, pos, starts };
}

/** Seeks made before the assignment apply to its first fetch (and records before the start are dropped anyway). */
function seekToStarts(consumer: Consumer, ranges: TopicRange[], starts: Map<string, bigint>): void {
  for (const r of ranges) {
    const empty: number[] = [];
    for (const [ps, start] of Object.entries(r.start)) {
      if (starts.has(id(r.topic, Number(ps)))) consumer.seek({ topic: r.topic, partition: Number(ps), offset: start });
      else empty.push(Number(ps));
    }
    // Nothing to read there: not fetched at all.
    if (empty.length > 0) consumer.pause([{ topic: r.topic, partitions: empty }]);
  }
}

/** The records of `ranges` (`[start, end)` per partition), by topic and partition, in offset order. */
export async function readRanges(
  kafka: Kafka,
  ranges: TopicRange[],
  options: ReadRangeOptions = {},
): Promise<Map<string, Map<number, RawRecord[]>>> {
  const { out, ends, pos, starts } = planRead(ranges);
  if (ends.size === 0) return out;

  const groupId = `turnstream-range-reader-${randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    readUncommitted: false,
    maxWaitTimeInMs: 100,
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 16 * 1024 * 1024,
    sessionTimeout: 30000,
    heartbeatInterval: 3000,
  });
  let resolveDone!: () => void;
  const allDone = new Promise<void>((r) => (resolveDone = r));
  const reached = (topic: string, p: number, last: bigint) => {
    const k = id(topic, p);
    const end = ends.get(k);
    if (end === undefined) return;
    if (last + 1n > (pos.get(k) ?? 0n)) pos.set(k, last + 1n);
    if ((pos.get(k) ?? 0n) >= end) {
      ends.delete(k);
      consumer.pause([{ topic, partitions: [p] }]);
      if (ends.size === 0) resolveDone();
    }
  };
  // Batches of control records alone (a transaction's end marker) come only as this event.
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    const { topic, partition, lastOffset } = e.payload as { topic: string; partition: number; lastOffset: string };
    reached(topic, partition, BigInt(lastOffset));
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: ranges.map((r) => r.topic), fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const end = ends.get(id(batch.topic, batch.partition));
        const list = out.get(batch.topic)?.get(batch.partition);
        if (end === undefined || !list) return;
        const start = starts.get(id(batch.topic, batch.partition)) ?? 0n;
        for (const m of batch.messages) {
          if (BigInt(m.offset) < start) continue;
          if (BigInt(m.offset) >= end) break;
          list.push({
            topic: batch.topic,
            partition: batch.partition,
            offset: m.offset,
            key: m.key,
            value: m.value,
            timestamp: Number(m.timestamp),
          });
        }
      },
    });
    seekToStarts(consumer, ranges, starts);
    const timeoutMs = options.timeoutMs ?? 600_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      allDone,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`reading the replay's range took over ${timeoutMs} ms`)), timeoutMs);
        options.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      }),
    ]).finally(() => clearTimeout(timer));
  } finally {
    await consumer.disconnect();
    const a = kafka.admin({ retry: { retries: 0 } });
    await a.connect();
    await a.deleteGroups([groupId]).catch(() => undefined);
    await a.disconnect();
  }
  return out;
}
