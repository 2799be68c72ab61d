/**
 * Rows waiting for ClickHouse, by table. A flush takes everything (`drain`); when an insert
 * fails the rows go back (`restore`) in front of what arrived meanwhile. The Kafka offsets they
 * cover are kept by the consumer (streams/flush-consumer.ts), committed once the rows are stored.
 */
import type { Row, TableId } from '../../analytics/index.ts';

export interface Drained {
  rows: Map<TableId, Row[]>;
  count: number;
}

export class RowBuffer {
  private rows = new Map<TableId, Row[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(table: TableId, row: Row): void {
    let list = this.rows.get(table);
    if (!list) this.rows.set(table, (list = []));
    list.push(row);
    this.count++;
  }

  drain(): Drained {
    const out: Drained = { rows: this.rows, count: this.count };
    this.rows = new Map();
    this.count = 0;
    return out;
  }

  /** Puts a failed batch back in front of what arrived since it was drained. */
  restore(batch: Drained): void {
    for (const [table, rows] of batch.rows) {
      if (rows.length === 0) continue;
      this.rows.set(table, [...rows, ...(this.rows.get(table) ?? [])]);
      this.count += rows.length;
    }
  }
}
