/**
 * Reading a GGUF file: metadata and tensor infos through node-llama-cpp's maintained parser,
 * tensor data read lazily from an open file handle and dequantized on demand, so reading one
 * tensor of a 7B model reads that tensor's bytes only.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { GgufFileInfo, GgufMetadata } from 'node-llama-cpp';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { dequantize } from './dequantize.ts';
import { elementCount, ggmlTypeName, tensorByteLength } from './ggml-type.ts';

/** One tensor of a GGUF file. */
export interface GgufTensor {
  readonly name: string;
  /** Dimensions, ne0 (the fastest-varying, a weight's input dim) first. */
  readonly dims: readonly number[];
  /** ggml type id (see `GgmlType`). */
  readonly type: number;
  /** `'Q4_1'`, `'F32'`, … */
  readonly typeName: string;
  /** Absolute byte offset of the data in the file. */
  readonly fileOffset: number;
  /** Bytes of data. */
  readonly byteLength: number;
  /** Number of values. */
  readonly elements: number;
}

/** An open GGUF file. Close it when done. */
export interface GgufFile {
  readonly path: string;
  /** Everything node-llama-cpp's `readGgufFileInfo` returned. */
  readonly info: GgufFileInfo;
  /** `general.architecture` (`'llama'`, `'qwen2'`, …). */
  readonly architecture: string;
  /** The metadata as nested objects (`metadata.llama.block_count`, `metadata.tokenizer.ggml.tokens`). */
  readonly metadata: GgufMetadata;
  /** Tensor infos in file order. */
  readonly tensors: readonly GgufTensor[];
  /** Byte offset of the end of the key/value section (where tensor infos begin). */
  readonly metadataEnd: number;
  /** Whether the file has a tensor of this name. */
  has(name: string): boolean;
  /** A tensor's info. @throws TurnstreamError TS_ERR_NOT_FOUND */
  tensor(name: string): GgufTensor;
  /** A tensor's raw bytes as stored. */
  readTensorBytes(name: string): Promise<Uint8Array>;
  /** A tensor's values as float32, in ggml order (a weight [ne0 = in, ne1 = out] is row-major [out][in]). */
  readTensor(name: string): Promise<Float32Array>;
  /**
   * Rows [first, first + count) of a tensor (rows along ne1: embedding rows of `token_embd.weight`)
   * as float32, reading only their bytes.
   */
  readTensorRows(name: string, first: number, count: number): Promise<Float32Array>;
  /** Raw bytes of the file at [offset, offset + length). */
  readBytes(offset: number, length: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** Options of {@link openGguf}. */
export interface OpenGgufOptions {
  /**
   * Metadata keys to leave out of `metadata` (large arrays one does not need).
   * @default []
   */
  ignoreKeys?: string[];
}

async function readExactly(handle: FileHandle, offset: number, length: number, path: string): Promise<Uint8Array> {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buf, done, length - done, offset + done);
    if (bytesRead === 0) {
      throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${path}: file ends at ${offset + done}, ${length - done} bytes short`);
    }
    done += bytesRead;
  }
  return new Uint8Array(buf.buffer, buf.byteOffset, length);
}

/**
 * Opens a GGUF file and reads its header (metadata and tensor infos).
 * @throws TurnstreamError TS_ERR_NOT_FOUND for a missing file; TS_ERR_CORRUPT_WEIGHTS for a file
 *   that is not GGUF, is split in parts, or whose tensors lie past its end
 */
export async function openGguf(path: string, options: OpenGgufOptions = {}): Promise<GgufFile> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code === 'ENOENT' ? ErrorCodes.NOT_FOUND : ErrorCodes.INVALID_INPUT;
    throw new TurnstreamError(code, `cannot open ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const { size } = await handle.stat();
    // Imported here: loading node-llama-cpp costs ~1 s, which nothing that only writes files should pay.
    const { readGgufFileInfo } = await import('node-llama-cpp');
    let info: GgufFileInfo;
    try {
      info = await readGgufFileInfo(path, {
        sourceType: 'filesystem',
        readTensorInfo: true,
        logWarnings: false,
        spliceSplitFiles: false,
        ignoreKeys: options.ignoreKeys,
      });
    } catch (err) {
      throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${path} is not a readable GGUF file: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const tensors = (info.tensorInfo ?? []).map((t): GgufTensor => {
      const dims = t.dimensions.map(Number);
      const type = Number(t.ggmlType);
      const fileOffset = Number(t.fileOffset);
      let byteLength: number;
      try {
        byteLength = tensorByteLength(type, dims);
      } catch {
        byteLength = -1; // a type this module does not know: its info is listed, its data cannot be read
      }
      if (byteLength > 0 && fileOffset + byteLength > size) {
        throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${path}: tensor ${t.name} ends past the end of the file (truncated?)`);
      }
      return { name: t.name, dims, type, typeName: ggmlTypeName(type), fileOffset, byteLength, elements: elementCount(dims) };
    });
    const byName = new Map(tensors.map((t) => [t.name, t]));
    const metadata = info.metadata;
    const tensor = (name: string): GgufTensor => {
      const t = byName.get(name);
      if (!t) throw new TurnstreamError(ErrorCodes.NOT_FOUND, `${path} has no tensor ${name}`);
      return t;
    };
    /** A tensor whose data this reader can read (its type's layout is known). */
    const readable = (name: string): GgufTensor => {
      const t = tensor(name);
      if (t.byteLength < 0)
        throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${name} is ggml ${t.typeName}, which this reader does not know`);
      return t;
    };
    const readTensorBytes = async (name: string): Promise<Uint8Array> => {
      const t = readable(name);
      return readExactly(handle, t.fileOffset, t.byteLength, path);
    };
    return {
      path,
      info,
      architecture: String(metadata.general?.architecture ?? ''),
      metadata,
      tensors,
      metadataEnd: info.metadataSize,
      has: (name) => byName.has(name),
      tensor,
      readTensorBytes,
      async readTensor(name) {
        const t = tensor(name);
        return dequantize(t.type, await readTensorBytes(name), t.elements);
      },
      async readTensorRows(name, first, count) {
        const t = readable(name);
        const rows = t.dims.length < 2 ? 1 : t.elements / t.dims[0];
        if (!Number.isInteger(first) || !Number.isInteger(count) || first < 0 || count < 0 || first + count > rows) {
          throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${name} has ${rows} rows; [${first}, ${first + count}) is out of range`);
        }
        const rowBytes = t.byteLength / rows;
        const bytes = await readExactly(handle, t.fileOffset + first * rowBytes, count * rowBytes, path);
        return dequantize(t.type, bytes, count * t.dims[0]);
      },
      readBytes: (offset, length) => readExactly(handle, offset, length, path),
      close: () => handle.close(),
    };
  } catch (err) {
    await handle.close();
    throw err;
  }
}
