/**
 * Simple reference quantizers: float32 → ggml blocks, the inverse of dequantize.ts. They pick
 * scales from each block's range (the legacy types exactly as ggml's `quantize_row_*_ref`; the
 * K-quants by min/max rather than ggml's iterative search, so their error is somewhat larger),
 * which is all the project needs: test models, adapters and merged exports that llama.cpp reads.
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { byGgmlType, ggmlTypeLayout, ggmlTypeName } from './ggml-type.ts';
import { HALF_TO_FLOAT, floatToHalf } from './half.ts';

type BlockEncoder = (x: Float32Array, dst: Uint8Array, nBlocks: number) => void;

/** Stores `v` as fp16 at `o` and returns the value actually stored. */
function putHalf(dst: Uint8Array, o: number, v: number): number {
  const h = floatToHalf(v);
  dst[o] = h & 0xff;
  dst[o + 1] = h >> 8;
  return HALF_TO_FLOAT[h];
}

const clamp = (v: number, lo: number, hi: number): number => (v < lo ? lo : v > hi ? hi : v);
/** C's roundf: halves away from zero. */
const roundf = (v: number): number => (v < 0 ? -Math.round(-v) : Math.round(v));
const inv = (d: number): number => (d ? 1 / d : 0);

/** The value of largest magnitude in x[o, o + n) (signed; the first one on ties). */
function signedAbsMax(x: Float32Array, o: number, n: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < n; j++) {
    const v = x[o + j];
    if (Math.abs(v) > amax) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return max;
}

const f32: BlockEncoder = (x, dst, n) => {
  new Uint8Array(dst.buffer, dst.byteOffset, 4 * n).set(new Uint8Array(x.buffer, x.byteOffset, 4 * n));
};

const f16: BlockEncoder = (x, dst, n) => {
  for (let i = 0; i < n; i++) {
    const h = floatToHalf(x[i]);
    dst[2 * i] = h & 0xff;
    dst[2 * i + 1] = h >> 8;
  }
};

const bf16: BlockEncoder = (x, dst, n) => {
  const bits = new Uint32Array(1);
  const f = new Float32Array(bits.buffer);
  for (let i = 0; i < n; i++) {
    f[0] = x[i];
    const u = bits[0];
    // Round to nearest even on the dropped 16 bits; NaN stays NaN.
    const b = (u & 0x7fffffff) > 0x7f800000 ? (u >>> 16) | 0x40 : (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
    dst[2 * i] = b & 0xff;
    dst[2 * i + 1] = (b >> 8) & 0xff;
  }
};

const q4_0: BlockEncoder = (x, dst, n) => {
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 32, b += 18) {
    const id = inv(putHalf(dst, b, signedAbsMax(x, o, 32) / -8));
    for (let j = 0; j < 16; j++) {
      const q0 = clamp(Math.floor(x[o + j] * id + 8.5), 0, 15);
      const q1 = clamp(Math.floor(x[o + j + 16] * id + 8.5), 0, 15);
      dst[b + 2 + j] = q0 | (q1 << 4);
    }
  }
};

function minMax(x: Float32Array, o: number, n: number): [number, number] {
  let min = Infinity;
  let max = -Infinity;
  for (let j = 0; j < n; j++) {
    const v = x[o + j];
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return [min, max];
}

const q4_1: BlockEncoder = (x, dst, n) => {
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 32, b += 20) {
    const [min, max] = minMax(x, o, 32);
    const id = inv(putHalf(dst, b, (max - min) / 15));
    const m = putHalf(dst, b + 2, min);
    for (let j = 0; j < 16; j++) {
      const q0 = clamp(Math.floor((x[o + j] - m) * id + 0.5), 0, 15);
      const q1 = clamp(Math.floor((x[o + j + 16] - m) * id + 0.5), 0, 15);
      dst[b + 4 + j] = q0 | (q1 << 4);
    }
  }
};

function putU32(dst: Uint8Array, o: number, v: number): void {
  dst[o] = v & 0xff;
  dst[o + 1] = (v >>> 8) & 0xff;
  dst[o + 2] = (v >>> 16) & 0xff;
  dst[o + 3] = (v >>> 24) & 0xff;
}

const q5_0: BlockEncoder = (x, dst, n) => {
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 32, b += 22) {
    const id = inv(putHalf(dst, b, signedAbsMax(x, o, 32) / -16));
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const q0 = clamp(Math.floor(x[o + j] * id + 16.5), 0, 31);
      const q1 = clamp(Math.floor(x[o + j + 16] * id + 16.5), 0, 31);
      dst[b + 6 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 >> 4) << j) | ((q1 >> 4) << (j + 16));
    }
    putU32(dst, b + 2, qh);
  }
};

const q5_1: BlockEncoder = (x, dst, n) => {
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 32, b += 24) {
    const [min, max] = minMax(x, o, 32);
    const id = inv(putHalf(dst, b, (max - min) / 31));
    const m = putHalf(dst, b + 2, min);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const q0 = clamp(Math.floor((x[o + j] - m) * id + 0.5), 0, 31);
      const q1 = clamp(Math.floor((x[o + j + 16] - m) * id + 0.5), 0, 31);
      dst[b + 8 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 >> 4) << j) | ((q1 >> 4) << (j + 16));
    }
    putU32(dst, b + 4, qh);
  }
};

const q8_0: BlockEncoder = (x, dst, n) => {
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 32, b += 34) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[o + j]));
    const id = inv(putHalf(dst, b, amax / 127));
    for (let j = 0; j < 32; j++) dst[b + 2 + j] = clamp(roundf(x[o + j] * id), -128, 127) & 0xff;
  }
};

/**
 * Asymmetric sub-blocks (Q2_K, Q4_K, Q5_K): each sub-block gets scale (max − min)/qmax and a
 * min clamped to ≤ 0 (ggml stores it as a positive amount to subtract). Returns both per sub-block.
 */
function subBlockScaleMin(x: Float32Array, o: number, nSub: number, subSize: number, qmax: number): [Float32Array, Float32Array] {
  const scales = new Float32Array(nSub);
  const mins = new Float32Array(nSub);
  for (let j = 0; j < nSub; j++) {
    const [mn, mx] = minMax(x, o + j * subSize, subSize);
    const min = Math.min(mn, 0);
    scales[j] = (mx - min) / qmax;
    mins[j] = -min;
  }
  return [scales, mins];
}

const maxOf = (a: Float32Array): number => a.reduce((m, v) => (v > m ? v : m), 0);

// Q2_K: 16 sub-blocks of 16, 2-bit quants, 4-bit scales and mins.
const q2_K: BlockEncoder = (x, dst, n) => {
  const L = new Uint8Array(256);
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 256, b += 84) {
    const [scales, mins] = subBlockScaleMin(x, o, 16, 16, 3);
    const d = putHalf(dst, b + 80, maxOf(scales) / 15);
    const dmin = putHalf(dst, b + 82, maxOf(mins) / 15);
    for (let j = 0; j < 16; j++) {
      const ls = clamp(Math.round(scales[j] * inv(d)), 0, 15);
      const lm = clamp(Math.round(mins[j] * inv(dmin)), 0, 15);
      dst[b + j] = ls | (lm << 4);
      const dl = d * ls;
      const ml = dmin * lm;
      for (let l = 0; l < 16; l++) L[16 * j + l] = dl ? clamp(Math.round((x[o + 16 * j + l] + ml) / dl), 0, 3) : 0;
    }
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const e = 128 * h + l;
        dst[b + 16 + 32 * h + l] = L[e] | (L[e + 32] << 2) | (L[e + 64] << 4) | (L[e + 96] << 6);
      }
    }
  }
};

// Q3_K: 16 sub-blocks of 16, signed 3-bit quants (−4..3), signed 6-bit scales.
const q3_K: BlockEncoder = (x, dst, n) => {
  const L = new Uint8Array(256);
  const sub = new Float32Array(16);
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 256, b += 110) {
    dst.fill(0, b, b + 110);
    for (let j = 0; j < 16; j++) sub[j] = signedAbsMax(x, o + 16 * j, 16) / -4;
    const maxScale = signedAbsMax(sub, 0, 16);
    const d = putHalf(dst, b + 108, maxScale / -32);
    const ls = new Uint8Array(16);
    for (let j = 0; j < 16; j++) {
      const l = clamp(Math.round(sub[j] * inv(d)), -32, 31);
      ls[j] = l + 32;
      const dl = d * l;
      for (let k = 0; k < 16; k++) L[16 * j + k] = (dl ? clamp(Math.round(x[o + 16 * j + k] / dl), -4, 3) : 0) + 4;
    }
    // Scales: low nibbles of 0..7 in bytes 0..7 and of 8..15 in their high nibbles; bits 4-5 in bytes 8..11.
    for (let j = 0; j < 16; j++) {
      const g = j >> 2;
      const r = j & 3;
      dst[b + 96 + r + 4 * (g & 1)] |= (ls[j] & 15) << (4 * (g >> 1));
      dst[b + 96 + 8 + r] |= (ls[j] >> 4) << (2 * g);
    }
    for (let e = 0; e < 256; e++) {
      const h = e >> 7;
      const j = (e >> 5) & 3;
      const l = e & 31;
      dst[b + 32 + 32 * h + l] |= (L[e] & 3) << (2 * j);
      if (L[e] > 3) dst[b + l] |= 1 << (4 * h + j);
    }
  }
};

/** Packs 6-bit scales and mins of 8 sub-blocks into 12 bytes (inverse of get_scale_min_k4). */
function putScaleMinK4(dst: Uint8Array, p: number, ls: Uint8Array, lm: Uint8Array): void {
  dst.fill(0, p, p + 12);
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      dst[p + j] |= ls[j];
      dst[p + j + 4] |= lm[j];
    } else {
      dst[p + j + 4] = (ls[j] & 15) | ((lm[j] & 15) << 4);
      dst[p + j - 4] |= (ls[j] >> 4) << 6;
      dst[p + j] |= (lm[j] >> 4) << 6;
    }
  }
}

/** Q4_K / Q5_K: the super-block's d/dmin and each sub-block's 6-bit scale and min; fills L with quants 0..qmax. */
function kScaleMin(x: Float32Array, o: number, dst: Uint8Array, b: number, qmax: number, L: Uint8Array): void {
  const [scales, mins] = subBlockScaleMin(x, o, 8, 32, qmax);
  const d = putHalf(dst, b, maxOf(scales) / 63);
  const dmin = putHalf(dst, b + 2, maxOf(mins) / 63);
  const ls = new Uint8Array(8);
  const lm = new Uint8Array(8);
  for (let j = 0; j < 8; j++) {
    ls[j] = clamp(Math.round(scales[j] * inv(d)), 0, 63);
    lm[j] = clamp(Math.round(mins[j] * inv(dmin)), 0, 63);
    const dl = d * ls[j];
    const ml = dmin * lm[j];
    for (let l = 0; l < 32; l++) L[32 * j + l] = dl ? clamp(Math.round((x[o + 32 * j + l] + ml) / dl), 0, qmax) : 0;
  }
  putScaleMinK4(dst, b + 4, ls, lm);
}

const q4_K: BlockEncoder = (x, dst, n) => {
  const L = new Uint8Array(256);
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 256, b += 144) {
    kScaleMin(x, o, dst, b, 15, L);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) dst[b + 16 + 32 * c + l] = L[64 * c + l] | (L[64 * c + 32 + l] << 4);
    }
  }
};

const q5_K: BlockEncoder = (x, dst, n) => {
  const L = new Uint8Array(256);
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 256, b += 176) {
    kScaleMin(x, o, dst, b, 31, L);
    dst.fill(0, b + 16, b + 48);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) {
        const lo = L[64 * c + l];
        const hi = L[64 * c + 32 + l];
        dst[b + 48 + 32 * c + l] = (lo & 15) | ((hi & 15) << 4);
        dst[b + 16 + l] |= ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1));
      }
    }
  }
};

// Q6_K: 16 sub-blocks of 16, signed 6-bit quants (−32..31), int8 scales.
const q6_K: BlockEncoder = (x, dst, n) => {
  const L = new Uint8Array(256);
  const sub = new Float32Array(16);
  for (let i = 0, o = 0, b = 0; i < n; i++, o += 256, b += 210) {
    for (let j = 0; j < 16; j++) sub[j] = signedAbsMax(x, o + 16 * j, 16) / -32;
    const d = putHalf(dst, b + 208, signedAbsMax(sub, 0, 16) / -128);
    for (let j = 0; j < 16; j++) {
      const sc = clamp(Math.round(sub[j] * inv(d)), -128, 127);
      dst[b + 192 + j] = sc & 0xff;
      const dl = d * sc;
      for (let k = 0; k < 16; k++) L[16 * j + k] = (dl ? clamp(Math.round(x[o + 16 * j + k] / dl), -32, 31) : 0) + 32;
    }
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const e = 128 * h + l;
        dst[b + 64 * h + l] = (L[e] & 15) | ((L[e + 64] & 15) << 4);
        dst[b + 64 * h + l + 32] = (L[e + 32] & 15) | ((L[e + 96] & 15) << 4);
        dst[b + 128 + 32 * h + l] = (L[e] >> 4) | ((L[e + 32] >> 4) << 2) | ((L[e + 64] >> 4) << 4) | ((L[e + 96] >> 4) << 6);
      }
    }
  }
};

const ENCODERS: Record<number, BlockEncoder> = byGgmlType({ f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K });

/** True when {@link quantize} can encode `type`. */
export const canQuantize = (type: number): boolean => type in ENCODERS;

/**
 * Encodes float32 `values` as ggml `type`; `values.length` must be whole blocks.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a type this module cannot write, or a partial block
 */
export function quantize(type: number, values: Float32Array): Uint8Array {
  const encode = ENCODERS[type];
  const layout = ggmlTypeLayout(type);
  if (!encode || !layout) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `cannot write ggml ${ggmlTypeName(type)}`);
  if (values.length % layout.blockSize !== 0) {
    throw new TurnstreamError(
      ErrorCodes.INVALID_INPUT,
      `${values.length} values are not whole ${layout.name} blocks of ${layout.blockSize}`,
    );
  }
  const nBlocks = values.length / layout.blockSize;
  const dst = new Uint8Array(nBlocks * layout.typeSize);
  encode(values, dst, nBlocks);
  return dst;
}
