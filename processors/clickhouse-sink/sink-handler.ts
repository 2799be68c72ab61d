/**
 * The sink's handler on the "flush, then commit" consumer (streams/flush-consumer.ts): each
 * record is decoded, mapped to a row (analytics rows) and encoded into the row buffer as
 * RowBinary; a flush inserts everything buffered, the tables side by side. The consumer commits
 * the offsets a flush covered once it succeeded, and retries a failed one (its rows go back to
 * the buffer).
 */
import type { KafkaMessage } from 'kafkajs';
import { toRow, type AnalyticsStore, type TableId } from '../../warehouse/index.ts';
import type { FlushConsumerOptions } from '../../streams/index.ts';
import { isRetriable } from '../../core/index.ts';
import type { ReplayTopic } from './replay-topics.ts';
import type { RowBuffer } from './row-buffer.ts';
import type { SinkDeadLetters } from './sink-dead-letters.ts';
import type { SinkRoutes } from './sink-routes.ts';
import type { SinkCounters } from './sink-stats.ts';
import type { TagCodecs } from './tag-codecs.ts';

export interface SinkHandlerParts {
  store: AnalyticsStore;
  buffer: RowBuffer;
  routes: SinkRoutes;
  codecs: TagCodecs;
  deadLetters: SinkDeadLetters;
  counters: SinkCounters;
  /** Called after each insert that succeeded (ClickhouseSinkOptions.onInsert). */
  onInsert?: (table: TableId, rows: number, flush: number) => void;
}

export class SinkHandler implements Pick<FlushConsumerOptions, 'handle' | 'buffered' | 'flush'> {
  /** Flushes so far (which flush an insert belonged to, for `onInsert`). */
  private flushes = 0;

  constructor(private readonly d: SinkHandlerParts) {}

  /** Decodes and buffers one record; a promise only when it must wait (a registry lookup, a dead letter to send). */
  handle(topic: string, partition: number, m: KafkaMessage): Promise<void> | undefined {
    const route = this.d.routes.of(topic);
    if (route) return this.accept(route, topic, partition, m);
    this.d.counters.skipped('unknown_topic');
    return undefined;
  }

  buffered(): number {
    return this.d.buffer.size;
  }

  /** Inserts everything buffered, the tables side by side; on failure the rows not stored go back. */
  async flush(): Promise<void> {
    const { store, buffer, counters } = this.d;
    const batch = buffer.drain();
    const flushNo = ++this.flushes;
    const started = performance.now();
    try {
      // ClickHouse parses each insert on a thread of its own.
      const inserts = [...batch.tables].map(async ([table, part]) => {
        if (part.rows === 0) return;
        await store.insertRowBinary(store.tables[table], buffer.columnsOf(table), part.chunks);
        // Stored: not sent again should another table of this batch fail.
        batch.tables.set(table, { chunks: [], rows: 0 });
        batch.count -= part.rows;
        counters.inserted(table, part.rows);
        this.d.onInsert?.(table, part.rows, flushNo);
      });
      const failed = (await Promise.allSettled(inserts)).find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    } catch (err) {
      buffer.restore(batch);
      counters.insertFailed(err);
      throw err;
    } finally {
      counters.buffered(buffer.size);
    }
    counters.flushed((performance.now() - started) / 1000);
  }

  /** The common record costs no await: its codecs are built and know its writer schema. */
  private accept(route: ReplayTopic, topic: string, partition: number, m: KafkaMessage): Promise<void> | undefined {
    this.d.counters.consumed();
    if (!m.value) {
      // Tombstones (compacted topics) carry no event.
      this.d.counters.skipped('tombstone');
      return undefined;
    }
    const codecs = this.d.codecs.ready(route.tag);
    let value: unknown;
    try {
      value = codecs?.of(route.id).decodeNow(m.value);
    } catch (err) {
      return this.d.deadLetters.send(route.id, topic, partition, m, err);
    }
    if (value === undefined) return this.acceptLater(route, topic, partition, m as KafkaMessage & { value: Buffer });
    return this.map(route, topic, partition, m, value);
  }

  /** The slow path of `accept`: codecs to build or a writer schema to fetch from the registry. */
  private async acceptLater(route: ReplayTopic, topic: string, partition: number, m: KafkaMessage & { value: Buffer }): Promise<void> {
    let value: unknown;
    const codecs = await this.d.codecs.of(route.tag);
    try {
      value = await codecs.of(route.id).decode(m.value);
    } catch (err) {
      // The codec says which: the registry being unreachable (retriable) is not the record's
      // fault, and the flush is retried; an undecodable record goes to the DLQ.
      if (isRetriable(err)) throw err;
      return this.d.deadLetters.send(route.id, topic, partition, m, err);
    }
    return this.map(route, topic, partition, m, value);
  }

  /** The row of a decoded record; a record that maps to none goes to the DLQ. */
  private map(route: ReplayTopic, topic: string, partition: number, m: KafkaMessage, value: unknown): Promise<void> | undefined {
    try {
      const { table, row } = toRow(route.id, value, { topic, partition, offset: m.offset, replayTag: route.tag });
      this.d.buffer.add(table, row);
      return undefined;
    } catch (err) {
      return this.d.deadLetters.send(route.id, topic, partition, m, err);
    }
  }
}
