/**
 * Waiting until a consumer group has committed every record its input topics hold now, in place
 * of an absence window. A transactional processor commits its outputs in the transaction that
 * commits the offsets of the records they came from, so once the group is past those records,
 * what it wrote for them is final: a check for doubles or extras then holds for good, not just
 * for the few seconds a window waits.
 */
import type { Kafka } from 'kafkajs';
import { readToEnd } from '../../streams/index.ts';
import { waitFor, type WaitForOptions } from './wait-for.ts';

/** Per topic and partition, one past its last record (a commit marker after it is not a record: no group commits past one). */
async function dataEnds(kafka: Kafka, topics: string[]): Promise<Map<string, Map<number, bigint>>> {
  const ends = new Map<string, Map<number, bigint>>();
  for (const topic of topics) {
    const byPartition = new Map<number, bigint>();
    await readToEnd(kafka, topic, (r) => void byPartition.set(r.partition, BigInt(r.offset) + 1n));
    ends.set(topic, byPartition);
  }
  return ends;
}

/** Waits until group `groupId` has committed past every record now in `topics`. */
export async function caughtUp(kafka: Kafka, groupId: string, topics: string[], options: WaitForOptions = {}): Promise<void> {
  const ends = await dataEnds(kafka, topics);
  const admin = kafka.admin();
  await admin.connect();
  try {
    await waitFor(
      `group ${groupId} to commit every record of ${topics.join(', ')}`,
      async () => {
        const committed = await admin.fetchOffsets({ groupId, topics });
        return [...ends].every(([topic, byPartition]) =>
          [...byPartition].every(([partition, end]) => {
            const at = committed.find((t) => t.topic === topic)?.partitions.find((p) => p.partition === partition)?.offset;
            return at !== undefined && BigInt(at) >= end;
          }),
        );
      },
      { timeoutMs: 90_000, intervalMs: 250, ...options },
    );
  } finally {
    await admin.disconnect();
  }
}
