/**
 * A GGUF v3 writer: header, typed key/values, tensor infos and aligned tensor data, as llama.cpp's
 * gguf.cpp reads them. Tensors are encoded and written one at a time (a tensor's data may be a
 * function called when the writer reaches it), so a merged 7B model never sits in memory whole.
 * The file is written under a temporary name and renamed when complete: a reader never sees a
 * partial file, and a crash leaves no file at `path`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { elementCount, ggmlTypeName, tensorByteLength } from './ggml-type.ts';
import { quantize } from './quantize.ts';

/** GGUF value type ids (gguf.h `enum gguf_type`). */
export const GgufValueType = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;

/** A GGUF scalar type. */
export type GgufScalarType = Exclude<keyof typeof GgufValueType, 'array'>;
type Scalar = number | bigint | boolean | string;

/** One metadata key/value to write. */
export type GgufKv =
  | { key: string; type: GgufScalarType; value: Scalar }
  | { key: string; type: 'array'; itemType: GgufScalarType; value: readonly Scalar[] }
  /** A value copied verbatim from another file: its type id followed by its encoded value. */
  | { key: string; type: 'raw'; bytes: Uint8Array };

/** Builders of {@link GgufKv} entries: `kv.u32('llama.block_count', 2)`. */
export const kv = {
  string: (key: string, value: string): GgufKv => ({ key, type: 'string', value }),
  u32: (key: string, value: number): GgufKv => ({ key, type: 'u32', value }),
  i32: (key: string, value: number): GgufKv => ({ key, type: 'i32', value }),
  u64: (key: string, value: number | bigint): GgufKv => ({ key, type: 'u64', value }),
  f32: (key: string, value: number): GgufKv => ({ key, type: 'f32', value }),
  bool: (key: string, value: boolean): GgufKv => ({ key, type: 'bool', value }),
  strings: (key: string, value: readonly string[]): GgufKv => ({ key, type: 'array', itemType: 'string', value }),
  i32s: (key: string, value: readonly number[]): GgufKv => ({ key, type: 'array', itemType: 'i32', value }),
  u32s: (key: string, value: readonly number[]): GgufKv => ({ key, type: 'array', itemType: 'u32', value }),
  f32s: (key: string, value: readonly number[]): GgufKv => ({ key, type: 'array', itemType: 'f32', value }),
};

/** Float values (encoded to the tensor's type on write) or bytes already in that type's encoding. */
export type GgufTensorData = Float32Array | Uint8Array;

/** One tensor to write. */
export interface GgufTensorSpec {
  name: string;
  /** Dimensions, ne0 first (a weight [in, out] is row-major [out][in]); at most 4. */
  dims: readonly number[];
  /** ggml type id to store (see `GgmlType`). */
  type: number;
  /** The data, or a function returning it, called once when the writer reaches this tensor. */
  data: GgufTensorData | (() => GgufTensorData | Promise<GgufTensorData>);
}

/** Options of {@link writeGguf}. */
export interface WriteGgufOptions {
  /** Key/values in the order to write them. `general.alignment` is added unless present. */
  metadata: readonly GgufKv[];
  /** Tensors in the order to write them (their data may be produced lazily, one at a time). */
  tensors: readonly GgufTensorSpec[];
  /** Data alignment in bytes, a power of two. @default 32 */
  alignment?: number;
}

/** What was written. */
export interface WrittenGguf {
  path: string;
  bytes: number;
  /** sha256 of the file, hex. */
  sha256: string;
}

const MAGIC = Buffer.from('GGUF', 'ascii');
const SCALAR_SIZE = { u8: 1, i8: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, u64: 8, i64: 8, f64: 8 } as const;

class ByteSink {
  readonly chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  u64(v: number | bigint): void {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }
  scalar(type: GgufScalarType, v: Scalar, key: string): void {
    const bad = (): never => {
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `metadata ${key}: ${JSON.stringify(String(v))} is not a ${type}`);
    };
    if (type === 'string') return typeof v === 'string' ? this.string(v) : bad();
    if (type === 'bool') return typeof v === 'boolean' ? this.push(Buffer.from([v ? 1 : 0])) : bad();
    if (typeof v !== 'number' && typeof v !== 'bigint') return bad();
    const b = Buffer.allocUnsafe(SCALAR_SIZE[type]);
    try {
      if (type === 'u64' || type === 'i64') {
        if (type === 'u64') b.writeBigUInt64LE(BigInt(v));
        else b.writeBigInt64LE(BigInt(v));
      } else if (typeof v === 'bigint') {
        return bad();
      } else if (type === 'f32' || type === 'f64') {
        if (type === 'f32') b.writeFloatLE(v);
        else b.writeDoubleLE(v);
      } else if (!Number.isInteger(v)) {
        return bad();
      } else if (type === 'u8') b.writeUInt8(v);
      else if (type === 'i8') b.writeInt8(v);
      else if (type === 'u16') b.writeUInt16LE(v);
      else if (type === 'i16') b.writeInt16LE(v);
      else if (type === 'u32') b.writeUInt32LE(v);
      else b.writeInt32LE(v);
    } catch (err) {
      if (err instanceof TurnstreamError) throw err;
      bad(); // out of range for the type
    }
    this.push(b);
  }
  concat(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

const pad = (n: number, alignment: number): number => (n + alignment - 1) & ~(alignment - 1);

function encodeTensor(spec: GgufTensorSpec, data: GgufTensorData, byteLength: number): Uint8Array {
  if (data instanceof Float32Array) {
    if (data.length !== elementCount(spec.dims)) {
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `tensor ${spec.name}: ${data.length} values for dims [${spec.dims.join(', ')}]`);
    }
    return quantize(spec.type, data);
  }
  if (data.byteLength !== byteLength) {
    throw new TurnstreamError(
      ErrorCodes.INVALID_INPUT,
      `tensor ${spec.name}: ${data.byteLength} bytes of ${ggmlTypeName(spec.type)} data, [${spec.dims.join(', ')}] takes ${byteLength}`,
    );
  }
  return data;
}

/**
 * Writes a GGUF v3 file at `path` (atomically: a temporary file renamed when complete).
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for duplicate keys or tensor names, bad values,
 *   dims that are not whole blocks of the type, or data of the wrong size
 */
export async function writeGguf(path: string, options: WriteGgufOptions): Promise<WrittenGguf> {
  const alignment = options.alignment ?? 32;
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `alignment ${alignment} is not a power of two`);
  }
  const metadata = [...options.metadata];
  if (!metadata.some((e) => e.key === 'general.alignment')) metadata.push(kv.u32('general.alignment', alignment));
  const keys = new Set<string>();
  for (const e of metadata) {
    if (keys.has(e.key)) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `metadata key ${e.key} given twice`);
    keys.add(e.key);
  }

  const head = new ByteSink();
  head.push(MAGIC);
  head.u32(3);
  head.u64(options.tensors.length);
  head.u64(metadata.length);
  for (const e of metadata) {
    head.string(e.key);
    if (e.type === 'raw') {
      head.push(Buffer.from(e.bytes.buffer, e.bytes.byteOffset, e.bytes.byteLength));
    } else if (e.type === 'array') {
      head.u32(GgufValueType.array);
      head.u32(GgufValueType[e.itemType]);
      head.u64(e.value.length);
      for (const v of e.value) head.scalar(e.itemType, v, e.key);
    } else {
      head.u32(GgufValueType[e.type]);
      head.scalar(e.type, e.value, e.key);
    }
  }

  const names = new Set<string>();
  const sizes: number[] = [];
  let offset = 0;
  for (const t of options.tensors) {
    if (names.has(t.name)) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `tensor ${t.name} given twice`);
    names.add(t.name);
    if (t.dims.length < 1 || t.dims.length > 4 || t.dims.some((d) => !Number.isInteger(d) || d < 1)) {
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `tensor ${t.name}: dims [${t.dims.join(', ')}] are not 1 to 4 positive integers`);
    }
    const size = tensorByteLength(t.type, t.dims);
    sizes.push(size);
    head.string(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(t.type);
    head.u64(offset);
    offset += pad(size, alignment);
  }
  const header = head.concat();

  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const hash = createHash('sha256');
  const file = await open(tmp, 'w');
  let written = 0;
  const write = async (bytes: Uint8Array): Promise<void> => {
    hash.update(bytes);
    let done = 0;
    while (done < bytes.byteLength) done += (await file.write(bytes, done, bytes.byteLength - done)).bytesWritten;
    written += bytes.byteLength;
  };
  const padTo = async (): Promise<void> => {
    const gap = pad(written, alignment) - written;
    if (gap > 0) await write(new Uint8Array(gap));
  };
  try {
    await write(header);
    if (options.tensors.length > 0) await padTo();
    for (let i = 0; i < options.tensors.length; i++) {
      const t = options.tensors[i];
      const data = typeof t.data === 'function' ? await t.data() : t.data;
      await write(encodeTensor(t, data, sizes[i]));
      await padTo();
    }
    await file.sync();
    await file.close();
    await rename(tmp, path);
  } catch (err) {
    await file.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw err;
  }
  return { path, bytes: written, sha256: hash.digest('hex') };
}
