/**
 * Reads bounded ranges of topics once (read_committed), with a throwaway consumer group pointed
 * at the ranges' starts before it joins (kafkajs has no manual assignment). A partition is done
 * when the consumer has fetched up to its end, transaction markers included (kafkajs reports
 * those in its batch events, never to `eachBatch`), so no idle wait is needed at the end.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { RawRecord } from '../../streams/index.ts';
import type { TopicRange } from './replay-range.ts';

export interface ReadRangeOptions {
  /** Give up after this long. @default 600000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The records of `ranges` (`[start, end)` per partition), by topic and partition, in offset order. */
export async function readRanges(
  kafka: Kafka,
  ranges: TopicRange[],
  options: ReadRangeOptions = {},
): Promise<Map<string, Map<number, RawRecord[]>>> {
  const out = new Map<string, Map<number, RawRecord[]>>();
  const ends = new Map<string, bigint>();
  const pos = new Map<string, bigint>();
  const id = (topic: string, p: number) => `${topic}\u0000${p}`;
  for (const r of ranges) {
    const byPartition = new Map<number, RawRecord[]>();
    out.set(r.topic, byPartition);
    for (const [ps, start] of Object.entries(r.start)) {
      const p = Number(ps);
      byPartition.set(p, []);
      if (BigInt(r.end[p]) > BigInt(start)) {
        ends.set(id(r.topic, p), BigInt(r.end[p]));
        pos.set(id(r.topic, p), BigInt(start));
      }
    }
  }
  if (ends.size === 0) return out;

  const groupId = `turnstream-range-reader-${randomUUID()}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const r of ranges)
      await admin.setOffsets({
        groupId,
        topic: r.topic,
        partitions: Object.entries(r.start).map(([p, offset]) => ({ partition: Number(p), offset })),
      });
  } finally {
    await admin.disconnect();
  }
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
    await consumer.subscribe({ topics: ranges.map((r) => r.topic) });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const end = ends.get(id(batch.topic, batch.partition));
        const list = out.get(batch.topic)?.get(batch.partition);
        if (end === undefined || !list) return;
        for (const m of batch.messages) {
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
    const a = kafka.admin();
    await a.connect();
    await a.deleteGroups([groupId]).catch(() => undefined);
    await a.disconnect();
  }
  return out;
}
