/**
 * Rows waiting for ClickHouse, by table, with the Kafka offsets they cover. A flush takes
 * everything (`drain`); when the insert fails the batch goes back (`restore`) in front of
 * what arrived meanwhile, so offsets are only committed for rows that are stored.
 */
import type { Row, TableId } from '../../analytics/index.ts';

/** `topic|partition` → next offset to commit (last covered + 1). */
export type OffsetMap = Map<string, bigint>;

export interface Drained {
  rows: Map<TableId, Row[]>;
  offsets: OffsetMap;
  count: number;
}

export const partitionKey = (topic: string, partition: number): string => `${topic}|${partition}`;

export function splitPartitionKey(key: string): { topic: string; partition: number } {
  const i = key.lastIndexOf('|');
  return { topic: key.slice(0, i), partition: Number(key.slice(i + 1)) };
}

export class RowBuffer {
  private rows = new Map<TableId, Row[]>();
  private offsets: OffsetMap = new Map();
  private count = 0;
  private oldestAt: number | undefined;

  get size(): number {
    return this.count;
  }

  /** Milliseconds since the oldest buffered row (or offset) arrived; 0 when empty. */
  age(now = Date.now()): number {
    return this.oldestAt === undefined ? 0 : now - this.oldestAt;
  }

  /** True when there is something to flush: rows, or offsets of records that made no row. */
  get pending(): boolean {
    return this.count > 0 || this.offsets.size > 0;
  }

  add(table: TableId, row: Row): void {
    let list = this.rows.get(table);
    if (!list) this.rows.set(table, (list = []));
    list.push(row);
    this.count++;
    this.oldestAt ??= Date.now();
  }

  /** Marks `offset` of a partition as handled (its row, if any, was added before). */
  cover(topic: string, partition: number, offset: string): void {
    const key = partitionKey(topic, partition);
    const next = BigInt(offset) + 1n;
    if ((this.offsets.get(key) ?? -1n) < next) this.offsets.set(key, next);
    this.oldestAt ??= Date.now();
  }

  drain(): Drained {
    const out: Drained = { rows: this.rows, offsets: this.offsets, count: this.count };
    this.rows = new Map();
    this.offsets = new Map();
    this.count = 0;
    this.oldestAt = undefined;
    return out;
  }

  /** Puts a failed batch back in front of what arrived since it was drained. */
  restore(batch: Drained): void {
    for (const [table, rows] of batch.rows) {
      if (rows.length === 0) continue;
      this.rows.set(table, [...rows, ...(this.rows.get(table) ?? [])]);
      this.count += rows.length;
    }
    for (const [key, next] of batch.offsets) {
      if ((this.offsets.get(key) ?? -1n) < next) this.offsets.set(key, next);
    }
    if (batch.count > 0 || batch.offsets.size > 0) this.oldestAt = Math.min(this.oldestAt ?? Date.now(), Date.now());
  }
}
