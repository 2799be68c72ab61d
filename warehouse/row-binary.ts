/**
 * Rows → ClickHouse RowBinary, encoded as they arrive. RowBinary has no escaping and no
 * names: strings are a varint length and their UTF-8 bytes, numbers are little-endian, and
 * the server reads it far faster than JSON (measured in `bench sink`). The column list and
 * types come from the table itself (`DESCRIBE TABLE`), so a migration changes the encoding
 * with it. A row that does not fit its columns (a missing value, a negative UInt, a string
 * in a number column) throws TS_ERR_INVALID_INPUT and leaves nothing behind: that record is
 * dead-lettered, and the insert of the others never fails for it.
 */
import { invalidInput } from '../core/index.ts';
import type { Row } from './rows.ts';

/** One column of a table, as `DESCRIBE TABLE` gives it. */
export interface Column {
  name: string;
  type: string;
}

type Kind = 'string' | 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'u64' | 'i64' | 'f32' | 'f64';

/** ClickHouse type → how it is written; Date and DateTime are a UInt16 of days and a UInt32 of seconds. */
const KINDS: Record<string, Kind> = {
  String: 'string',
  UInt8: 'u8',
  Int8: 'i8',
  UInt16: 'u16',
  Int16: 'i16',
  UInt32: 'u32',
  Int32: 'i32',
  UInt64: 'u64',
  Int64: 'i64',
  Float32: 'f32',
  Float64: 'f64',
  Date: 'u16',
  DateTime: 'u32',
};

const CHUNK = 1 << 20;
const TWO_32 = 2 ** 32;
/** Bytes of the varint length prefix of a string of `n` UTF-8 bytes. */
const varintSize = (n: number): number => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/** Encodes the rows of one table, in its column order, into 1 MiB chunks. */
export class RowBinaryEncoder {
  readonly columns: readonly Column[];
  private readonly kinds: Kind[];
  private readonly names: string[];
  private buf = Buffer.allocUnsafe(CHUNK);
  private at = 0;
  private chunks: Buffer[] = [];
  private count = 0;

  /** Throws for a column whose type it cannot write (the table is not one of ours). */
  constructor(columns: readonly Column[]) {
    this.columns = columns;
    this.names = columns.map((c) => c.name);
    this.kinds = columns.map((c) => {
      const k = KINDS[c.type];
      if (!k) throw invalidInput(`column ${c.name} has type ${c.type}, which the RowBinary encoder does not write`, c.name);
      return k;
    });
  }

  /** Rows encoded since the last `take`. */
  get rows(): number {
    return this.count;
  }

  /** Appends one row; on an invalid value throws and appends nothing. */
  add(row: Row): void {
    this.reserve(row);
    const start = this.at;
    try {
      for (let i = 0; i < this.kinds.length; i++) this.write(this.kinds[i]!, this.names[i]!, row[this.names[i]!]);
    } catch (err) {
      this.at = start;
      throw err;
    }
    this.count++;
  }

  /** The encoded rows so far (chunks to send in order), and a fresh start. */
  take(): { chunks: Buffer[]; rows: number } {
    const chunks = this.chunks;
    if (this.at > 0) chunks.push(this.buf.subarray(0, this.at));
    const out = { chunks, rows: this.count };
    this.chunks = [];
    // The tail of the current chunk is still free, and what was taken keeps its own view.
    this.buf = this.buf.subarray(this.at);
    if (this.buf.length < 4096) this.buf = Buffer.allocUnsafe(CHUNK);
    this.at = 0;
    this.count = 0;
    return out;
  }

  /** Makes room for the row's largest possible encoding in the current chunk, so a row never spans two. */
  private reserve(row: Row): void {
    let max = 0;
    for (let i = 0; i < this.kinds.length; i++) {
      const v = row[this.names[i]!];
      max += this.kinds[i] === 'string' ? (typeof v === 'string' ? 3 * v.length + 5 : 0) : 8;
    }
    if (this.at + max <= this.buf.length) return;
    if (this.at > 0) this.chunks.push(this.buf.subarray(0, this.at));
    this.buf = Buffer.allocUnsafe(Math.max(CHUNK, max));
    this.at = 0;
  }

  private write(kind: Kind, name: string, v: unknown): void {
    const b = this.buf;
    if (kind === 'string') {
      if (typeof v !== 'string') throw invalidInput(`${name} must be a string, got ${typeof v}`, name);
      // UTF-8 takes len..3×len bytes: when both need the same prefix, write first and fill the prefix in after.
      const lo = varintSize(v.length);
      const size = lo === varintSize(3 * v.length) ? lo : varintSize(Buffer.byteLength(v));
      const n = b.write(v, this.at + size, 'utf8');
      let len = n;
      for (let i = 0; i < size - 1; i++, len >>>= 7) b[this.at + i] = (len & 0x7f) | 0x80;
      b[this.at + size - 1] = len;
      this.at += size + n;
      return;
    }
    if (typeof v !== 'number' && !(typeof v === 'string' && (kind === 'u64' || kind === 'i64'))) {
      throw invalidInput(`${name} must be a number, got ${typeof v}`, name);
    }
    try {
      switch (kind) {
        case 'u8':
          this.at = b.writeUInt8(v as number, this.at);
          return;
        case 'i8':
          this.at = b.writeInt8(v as number, this.at);
          return;
        case 'u16':
          this.at = b.writeUInt16LE(v as number, this.at);
          return;
        case 'i16':
          this.at = b.writeInt16LE(v as number, this.at);
          return;
        case 'u32':
          this.at = b.writeUInt32LE(v as number, this.at);
          return;
        case 'i32':
          this.at = b.writeInt32LE(v as number, this.at);
          return;
        case 'f32':
          this.at = b.writeFloatLE(v as number, this.at);
          return;
        case 'f64':
          this.at = b.writeDoubleLE(v as number, this.at);
          return;
        case 'u64':
          if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) {
            b.writeUInt32LE(v % TWO_32, this.at);
            b.writeUInt32LE(Math.floor(v / TWO_32), this.at + 4);
            this.at += 8;
          } else this.at = b.writeBigUInt64LE(BigInt(v as string | number), this.at);
          return;
        case 'i64':
          this.at = b.writeBigInt64LE(BigInt(v as string | number), this.at);
          return;
      }
    } catch (err) {
      throw invalidInput(`${name} = ${String(v)} does not fit ${this.columns.find((c) => c.name === name)?.type}`, name, err);
    }
  }
}
