/**
 * Rows waiting for ClickHouse, by table, already encoded as RowBinary (warehouse/row-binary.ts):
 * the encoding is spread over the records as they arrive, so a flush only sends bytes. A flush
 * takes everything (`drain`); when an insert fails the rows go back (`restore`) in front of what
 * arrived meanwhile. The Kafka offsets they cover are kept by the consumer
 * (streams/flush-consumer.ts), committed once the rows are stored.
 */
import { invalidInput } from '../../core/index.ts';
import { RowBinaryEncoder, type Column, type Row, type TableId } from '../../warehouse/index.ts';

/** Encoded rows of one table: chunks to send in order. */
export interface EncodedRows {
  chunks: Buffer[];
  rows: number;
}

export interface Drained {
  tables: Map<TableId, EncodedRows>;
  count: number;
}

export class RowBuffer {
  private readonly encoders = new Map<TableId, RowBinaryEncoder>();
  /** Rows of a failed flush, sent before the encoders' newer ones. */
  private front = new Map<TableId, EncodedRows>();
  private frontRows = 0;

  /** The table's insertable columns (AnalyticsStore.columns); rows of a table without them are refused. */
  setColumns(table: TableId, columns: readonly Column[]): void {
    this.encoders.set(table, new RowBinaryEncoder(columns));
  }

  columnsOf(table: TableId): readonly Column[] {
    return this.encoders.get(table)?.columns ?? [];
  }

  get size(): number {
    let n = this.frontRows;
    for (const e of this.encoders.values()) n += e.rows;
    return n;
  }

  /** Encodes the row; throws TS_ERR_INVALID_INPUT, adding nothing, when it does not fit its table. */
  add(table: TableId, row: Row): void {
    const e = this.encoders.get(table);
    if (!e) throw invalidInput(`no columns known for table ${table}`, 'table');
    e.add(row);
  }

  drain(): Drained {
    const tables = this.front;
    let count = this.frontRows;
    this.front = new Map();
    this.frontRows = 0;
    for (const [table, e] of this.encoders) {
      if (e.rows === 0) continue;
      const { chunks, rows } = e.take();
      const had = tables.get(table);
      tables.set(table, had ? { chunks: [...had.chunks, ...chunks], rows: had.rows + rows } : { chunks, rows });
      count += rows;
    }
    return { tables, count };
  }

  /** Puts a failed batch back in front of what arrived since it was drained. */
  restore(batch: Drained): void {
    for (const [table, part] of batch.tables) {
      if (part.rows === 0) continue;
      const had = this.front.get(table);
      this.front.set(table, had ? { chunks: [...part.chunks, ...had.chunks], rows: part.rows + had.rows } : part);
      this.frontRows += part.rows;
    }
  }
}
