/**
 * The key/values of a GGUF file as raw bytes, to copy into another file verbatim. node-llama-cpp
 * parses values but drops their types (a uint32 and an int32 both come back as a number), and
 * llama.cpp checks types strictly, so a file derived from another (a merged model) copies each
 * value's bytes rather than re-encoding a parsed value. This only finds where each entry ends.
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import type { GgufFile } from './gguf-file.ts';
import type { GgufKv } from './gguf-writer.ts';

// Sizes of the fixed-size value types by GGUF type id; 8 = string and 9 = array are walked.
const FIXED: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/**
 * Every key/value of `file`, in file order, as `{ type: 'raw' }` entries for `writeGguf`.
 * @throws TurnstreamError TS_ERR_CORRUPT_WEIGHTS when the section does not parse
 */
export async function readRawMetadata(file: GgufFile): Promise<GgufKv[]> {
  const buf = Buffer.from(await file.readBytes(0, file.metadataEnd));
  const corrupt = (why: string): TurnstreamError => new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${file.path}: metadata ${why}`);
  const count = Number(buf.readBigUInt64LE(16));
  let p = 24;
  const need = (n: number): void => {
    if (p + n > buf.length) throw corrupt(`runs past its end at byte ${p}`);
  };
  const u32 = (): number => {
    need(4);
    const v = buf.readUInt32LE(p);
    p += 4;
    return v;
  };
  const u64 = (): number => {
    need(8);
    const v = Number(buf.readBigUInt64LE(p));
    p += 8;
    return v;
  };
  const skipValue = (type: number): void => {
    if (type in FIXED) {
      need(FIXED[type]);
      p += FIXED[type];
    } else if (type === 8) {
      const n = u64();
      need(n);
      p += n;
    } else if (type === 9) {
      const itemType = u32();
      const n = u64();
      if (itemType in FIXED) {
        need(n * FIXED[itemType]);
        p += n * FIXED[itemType];
      } else for (let i = 0; i < n; i++) skipValue(itemType);
    } else {
      throw corrupt(`has a value of unknown type ${type} at byte ${p}`);
    }
  };
  const entries: GgufKv[] = [];
  for (let i = 0; i < count; i++) {
    const keyLength = u64();
    need(keyLength);
    const key = buf.toString('utf8', p, p + keyLength);
    p += keyLength;
    const start = p;
    skipValue(u32());
    entries.push({ key, type: 'raw', bytes: new Uint8Array(buf.subarray(start, p)) });
  }
  if (p !== file.metadataEnd) throw corrupt(`ends at byte ${p}, the parser said ${file.metadataEnd}`);
  return entries;
}
