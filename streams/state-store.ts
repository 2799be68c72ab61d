/**
 * A keyed state store held in memory and backed by a compacted changelog topic. Writes are
 * staged by a handler and become changelog records produced in the handler's transaction;
 * a partition's state is restored from the changelog when the partition is assigned.
 */
import type { Kafka } from 'kafkajs';
import type { Codec } from '../schemas/index.ts';
import { readToEnd } from './topic-reader.ts';

interface Entry<S> {
  partition: number;
  value: S;
}

export class StateStore<S> {
  private readonly entries = new Map<string, Entry<S>>();
  private readonly codec: Codec<S>;

  constructor(codec: Codec<S>) {
    this.codec = codec;
  }

  get topic(): string {
    return this.codec.topic;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): S | undefined {
    return this.entries.get(key)?.value;
  }

  partitionOf(key: string): number | undefined {
    return this.entries.get(key)?.partition;
  }

  set(key: string, partition: number, value: S | undefined): void {
    if (value === undefined) this.entries.delete(key);
    else this.entries.set(key, { partition, value });
  }

  *entriesOf(partitions: ReadonlySet<number>): IterableIterator<[string, S, number]> {
    for (const [k, e] of this.entries) if (partitions.has(e.partition)) yield [k, e.value, e.partition];
  }

  /** Forgets the state of partitions this instance no longer owns. */
  dropPartitions(partitions: ReadonlySet<number>): void {
    for (const [k, e] of this.entries) if (partitions.has(e.partition)) this.entries.delete(k);
  }

  /** Replaces the state of `partitions` with what the changelog holds. */
  async restore(kafka: Kafka, partitions: ReadonlySet<number>): Promise<number> {
    this.dropPartitions(partitions);
    return readToEnd(
      kafka,
      this.codec.topic,
      async (r) => {
        if (!r.key) return;
        const key = r.key.toString('utf8');
        if (r.value === null) this.entries.delete(key);
        else this.entries.set(key, { partition: r.partition, value: await this.codec.decode(r.value) });
      },
      { partitions },
    );
  }

  encode(value: S): Promise<Buffer> {
    return this.codec.encode(value);
  }
}
