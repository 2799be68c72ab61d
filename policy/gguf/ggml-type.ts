/**
 * ggml tensor types: their numeric ids in GGUF files and their block layouts. The ids are the
 * file format (ggml.h's `enum ggml_type`), so they are listed here rather than imported from
 * node-llama-cpp, whose import costs more than a second.
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';

export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  BF16: 30,
} as const;

/** A ggml type id (the number stored in a GGUF tensor info). */
export type GgmlType = (typeof GgmlType)[keyof typeof GgmlType];

/** The name of a ggml type this module knows (`'Q4_K'`, `'F16'`, …). */
export type GgmlTypeName = keyof typeof GgmlType;

/** How a type packs values: `blockSize` values take `typeSize` bytes. */
export interface GgmlTypeLayout {
  readonly name: GgmlTypeName;
  readonly blockSize: number;
  readonly typeSize: number;
}

const LAYOUTS: Record<number, GgmlTypeLayout> = {};
const layout = (name: GgmlTypeName, blockSize: number, typeSize: number): void => {
  LAYOUTS[GgmlType[name]] = { name, blockSize, typeSize };
};
layout('F32', 1, 4);
layout('F16', 1, 2);
layout('BF16', 1, 2);
layout('F64', 1, 8);
layout('I8', 1, 1);
layout('I16', 1, 2);
layout('I32', 1, 4);
layout('I64', 1, 8);
layout('Q4_0', 32, 2 + 16);
layout('Q4_1', 32, 2 + 2 + 16);
layout('Q5_0', 32, 2 + 4 + 16);
layout('Q5_1', 32, 2 + 2 + 4 + 16);
layout('Q8_0', 32, 2 + 32);
layout('Q8_1', 32, 2 + 2 + 32);
// K-quants: super-blocks of 256 (QK_K).
layout('Q2_K', 256, 16 + 64 + 2 + 2);
layout('Q3_K', 256, 32 + 64 + 12 + 2);
layout('Q4_K', 256, 2 + 2 + 12 + 128);
layout('Q5_K', 256, 2 + 2 + 12 + 32 + 128);
layout('Q6_K', 256, 128 + 64 + 16 + 2);
layout('Q8_K', 256, 4 + 256 + 32);

/** The layout of `type`, or undefined for a type this module does not know. */
export function ggmlTypeLayout(type: number): GgmlTypeLayout | undefined {
  return LAYOUTS[type];
}

/** `'Q4_K'` for 12; `'type 20'` for a type this module does not know. */
export function ggmlTypeName(type: number): string {
  return LAYOUTS[type]?.name ?? `type ${type}`;
}

/** The id of a type given by name (`'q8_0'` or `'Q8_0'`). */
export function ggmlTypeFromName(name: string): GgmlType | undefined {
  const key = name.toUpperCase() as GgmlTypeName;
  return Object.hasOwn(GgmlType, key) ? GgmlType[key] : undefined;
}

/**
 * A table by type id from one by type name, in any case (`{ q8_0: f }` is `{ 8: f }`), so that a
 * codec table can name each type once.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a name that is not a ggml type
 */
export function byGgmlType<T>(byName: Record<string, T>): Record<number, T> {
  const out: Record<number, T> = {};
  for (const [name, value] of Object.entries(byName)) {
    const type = ggmlTypeFromName(name);
    if (type === undefined) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `unknown ggml type name ${name}`);
    out[type] = value;
  }
  return out;
}

/**
 * Bytes a tensor of `dims` (ne0 first) takes in `type`. ggml quantizes along ne0 only, so ne0
 * must be a multiple of the block size.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for an unknown type or a row that is not whole blocks
 */
export function tensorByteLength(type: number, dims: readonly number[]): number {
  const l = LAYOUTS[type];
  if (!l) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `unknown ggml type ${type}`);
  const ne0 = dims[0] ?? 1;
  if (ne0 % l.blockSize !== 0) {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `a ${l.name} row holds whole blocks of ${l.blockSize}; ne0 = ${ne0} does not`);
  }
  const rows = dims.slice(1).reduce((a, b) => a * b, 1);
  return (ne0 / l.blockSize) * l.typeSize * rows;
}

/** Number of values in a tensor of `dims`. */
export const elementCount = (dims: readonly number[]): number => dims.reduce((a, b) => a * b, 1);
