/**
 * kafkajs consume → produce exactly once, committed as the processor runtime commits: every
 * 20 ms what was fetched since goes out with its offsets in transactions (streams/transactions.ts),
 * fenced one of the two ways `bench clients` compares:
 *
 * - `instance`: one transactional producer for the instance, every partition's records in one
 *   transaction: the runtime until the fencing by partition (id `<group>.<instance>`), which a
 *   partition moving mid-transaction could double;
 * - `partition`: one transactional producer per input partition, claimed when the partition is
 *   assigned, one transaction per partition side by side: the runtime now.
 */
import type { Kafka } from 'kafkajs';
import { createLogger } from '../core/index.ts';
import { Transactions, type TransactionOutput } from '../streams/index.ts';
import { brokerConnections, peakOf } from './connections.ts';

export type Fencing = 'instance' | 'partition';

export interface EosPassthroughResult {
  seconds: number;
  /** Transactional producers the instance held. */
  producers: number;
  /** Its connections to the brokers at the most (consumer and producers); null where they cannot be counted. */
  connections: number | null;
  transactions: number;
}

/** Input records buffered before fetching waits for a commit (the runtime's default bound per transaction). */
const MAX_PENDING = 4000;

export async function eosPassthrough(
  kafka: Kafka,
  from: string,
  to: string,
  count: number,
  groupId: string,
  fencing: Fencing,
  brokerPortSet: ReadonlySet<number>,
): Promise<EosPassthroughResult> {
  const logger = createLogger('bench-eos', 'warn');
  const before = brokerConnections(process.pid, brokerPortSet);
  const peak = peakOf(() => {
    const n = brokerConnections(process.pid, brokerPortSet);
    return n === null || before === null ? null : n - before;
  });
  const producers = new Map<number, Transactions>();
  const txOf = (partition: number): Transactions => {
    const key = fencing === 'instance' ? -1 : partition;
    let tx = producers.get(key);
    if (!tx) {
      tx = new Transactions({ kafka, transactionalId: `${groupId}.${fencing === 'instance' ? '0' : `partition-${partition}`}`, logger });
      producers.set(key, tx);
    }
    return tx;
  };
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 20, readUncommitted: false });
  let claimed: Promise<unknown> = Promise.resolve();
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const parts = e.payload.memberAssignment[from] ?? [];
    claimed = Promise.all(
      (fencing === 'instance' ? [0] : parts).map(async (p) => {
        const tx = txOf(p);
        await tx.connect();
        await tx.claim();
      }),
    );
  });
  let pending = new Map<number, { outputs: TransactionOutput[]; next: string }>();
  let buffered = 0;
  let committed = 0;
  let transactions = 0;
  let t0 = 0;
  let running = true;
  let drained: (() => void) | undefined;
  const commitLoop = async (): Promise<void> => {
    while (running) {
      if (pending.size === 0) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      const round = pending;
      pending = new Map();
      const offsetsOf = (ps: Array<[number, { next: string }]>) => ({
        groupId,
        topics: [{ topic: from, partitions: ps.map(([partition, { next }]) => ({ partition, offset: next })) }],
      });
      const groups: Array<[Transactions, Array<[number, { outputs: TransactionOutput[]; next: string }]>]> =
        fencing === 'instance' ? [[txOf(0), [...round]]] : [...round].map((e) => [txOf(e[0]), [e]]);
      await Promise.all(
        groups.map(async ([tx, entries]) => {
          await tx.commit(() => ({ outputs: entries.flatMap(([, v]) => v.outputs), offsets: offsetsOf(entries) }));
          transactions++;
        }),
      );
      const n = [...round.values()].reduce((a, v) => a + v.outputs.length, 0);
      committed += n;
      buffered -= n;
      drained?.();
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  let loop: Promise<void> = Promise.resolve();
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: from, fromBeginning: true });
    const done = new Promise<void>((resolve, reject) => {
      loop = commitLoop().catch(reject);
      const check = setInterval(() => {
        if (committed >= count) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        await claimed;
        t0 ||= performance.now();
        const slot = pending.get(batch.partition) ?? { outputs: [], next: '0' };
        for (const m of batch.messages) slot.outputs.push({ topic: to, key: m.key?.toString('utf8') ?? '', value: m.value });
        slot.next = (BigInt(batch.lastOffset()) + 1n).toString();
        pending.set(batch.partition, slot);
        buffered += batch.messages.length;
        while (buffered > MAX_PENDING * Math.max(1, producers.size) && running) await new Promise<void>((r) => (drained = r));
      },
    });
    await done;
    return { seconds: (performance.now() - t0) / 1000, producers: producers.size, connections: peak.stop(), transactions };
  } finally {
    running = false;
    drained?.();
    peak.stop();
    await consumer.disconnect();
    await loop.catch(() => undefined);
    await Promise.all([...producers.values()].map((tx) => tx.disconnect()));
  }
}
