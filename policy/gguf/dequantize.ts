/**
 * Dequantization of ggml tensor data to float32, following the block layouts of llama.cpp's
 * ggml-common.h / ggml-quants.c. Every function reads `nBlocks` blocks from `src` (little-endian,
 * as GGUF is) and writes `nBlocks · blockSize` values to `out`. Element order within a block is
 * ggml's, which is what the model's matrices assume: for a weight [ne0 = in, ne1 = out], the
 * result is row-major [out][in].
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { byGgmlType, elementCount, ggmlTypeLayout, ggmlTypeName } from './ggml-type.ts';
import { HALF_TO_FLOAT as H, bfloat16ToFloat } from './half.ts';

type BlockDecoder = (src: Uint8Array, out: Float32Array, nBlocks: number) => void;

const half = (s: Uint8Array, o: number): number => H[s[o] | (s[o + 1] << 8)];
const u32le = (s: Uint8Array, o: number): number => (s[o] | (s[o + 1] << 8) | (s[o + 2] << 16) | (s[o + 3] << 24)) >>> 0;

const f16: BlockDecoder = (s, out, n) => {
  for (let i = 0; i < n; i++) out[i] = H[s[2 * i] | (s[2 * i + 1] << 8)];
};

const bf16: BlockDecoder = (s, out, n) => {
  for (let i = 0; i < n; i++) out[i] = bfloat16ToFloat(s[2 * i] | (s[2 * i + 1] << 8));
};

const f32: BlockDecoder = (s, out, n) => {
  out.set(new Float32Array(s.buffer.slice(s.byteOffset, s.byteOffset + 4 * n)));
};

// Q4_0: fp16 d, 16 bytes; value = d·(q − 8); low nibbles are elements 0..15, high 16..31.
const q4_0: BlockDecoder = (s, out, n) => {
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 18, o += 32) {
    const d = half(s, b);
    for (let j = 0; j < 16; j++) {
      const q = s[b + 2 + j];
      out[o + j] = ((q & 15) - 8) * d;
      out[o + j + 16] = ((q >> 4) - 8) * d;
    }
  }
};

// Q4_1: fp16 d, fp16 m, 16 bytes; value = d·q + m.
const q4_1: BlockDecoder = (s, out, n) => {
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 20, o += 32) {
    const d = half(s, b);
    const m = half(s, b + 2);
    for (let j = 0; j < 16; j++) {
      const q = s[b + 4 + j];
      out[o + j] = (q & 15) * d + m;
      out[o + j + 16] = (q >> 4) * d + m;
    }
  }
};

// Q5_0: fp16 d, 32 high bits (bit j = element j's 5th bit), 16 bytes; value = d·(q − 16).
const q5_0: BlockDecoder = (s, out, n) => {
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 22, o += 32) {
    const d = half(s, b);
    const qh = u32le(s, b + 2);
    for (let j = 0; j < 16; j++) {
      const q = s[b + 6 + j];
      out[o + j] = (((q & 15) | (((qh >>> j) << 4) & 0x10)) - 16) * d;
      out[o + j + 16] = (((q >> 4) | ((qh >>> (j + 12)) & 0x10)) - 16) * d;
    }
  }
};

// Q5_1: fp16 d, fp16 m, 32 high bits, 16 bytes; value = d·q + m.
const q5_1: BlockDecoder = (s, out, n) => {
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 24, o += 32) {
    const d = half(s, b);
    const m = half(s, b + 2);
    const qh = u32le(s, b + 4);
    for (let j = 0; j < 16; j++) {
      const q = s[b + 8 + j];
      out[o + j] = ((q & 15) | (((qh >>> j) << 4) & 0x10)) * d + m;
      out[o + j + 16] = ((q >> 4) | ((qh >>> (j + 12)) & 0x10)) * d + m;
    }
  }
};

// Q8_0: fp16 d, 32 signed bytes; value = d·q.
const q8_0: BlockDecoder = (s, out, n) => {
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 34, o += 32) {
    const d = half(s, b);
    for (let j = 0; j < 32; j++) out[o + j] = ((s[b + 2 + j] << 24) >> 24) * d;
  }
};

// Q2_K: scales[16] (low nibble scale, high nibble min), qs[64] (2 bits), fp16 d, fp16 dmin.
// Element 128h + 32j + l is bits 2j of qs[32h + l], in sub-block 8h + 2j + (l ≥ 16).
const q2_K: BlockDecoder = (s, out, n) => {
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 84, o += 256) {
    const d = half(s, b + 80);
    const dmin = half(s, b + 82);
    for (let h = 0; h < 2; h++) {
      for (let j = 0; j < 4; j++) {
        const shift = 2 * j;
        for (let g = 0; g < 2; g++) {
          const sc = s[b + 8 * h + 2 * j + g];
          const dl = d * (sc & 15);
          const ml = dmin * (sc >> 4);
          const q = b + 16 + 32 * h + 16 * g;
          const y = o + 128 * h + 32 * j + 16 * g;
          for (let l = 0; l < 16; l++) out[y + l] = dl * ((s[q + l] >> shift) & 3) - ml;
        }
      }
    }
  }
};

// Q3_K: hmask[32] (3rd bit), qs[64] (low 2 bits), scales[12] (sixteen 6-bit scales, offset 32), fp16 d.
// Value = d·scale·(q − 4·(high bit clear)).
const q3_K: BlockDecoder = (s, out, n) => {
  const scales = new Int8Array(16);
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 110, o += 256) {
    const sb = b + 96;
    for (let k = 0; k < 16; k++) {
      const g = k >> 2;
      const r = k & 3;
      const lo = (s[sb + r + 4 * (g & 1)] >> (4 * (g >> 1))) & 15;
      const hi = (s[sb + 8 + r] >> (2 * g)) & 3;
      scales[k] = (lo | (hi << 4)) - 32;
    }
    const d = half(s, b + 108);
    for (let h = 0; h < 2; h++) {
      for (let j = 0; j < 4; j++) {
        const shift = 2 * j;
        const bit = 1 << (4 * h + j);
        for (let g = 0; g < 2; g++) {
          const dl = d * scales[8 * h + 2 * j + g];
          const q = b + 32 + 32 * h + 16 * g;
          const hm = b + 16 * g;
          const y = o + 128 * h + 32 * j + 16 * g;
          for (let l = 0; l < 16; l++) out[y + l] = dl * (((s[q + l] >> shift) & 3) - (s[hm + l] & bit ? 0 : 4));
        }
      }
    }
  }
};

/** Q4_K / Q5_K: scale and min of sub-block j (0..7), 6 bits each, packed in 12 bytes at `p`. */
function scaleMinK4(s: Uint8Array, p: number, j: number, sm: Uint8Array): void {
  if (j < 4) {
    sm[0] = s[p + j] & 63;
    sm[1] = s[p + j + 4] & 63;
  } else {
    sm[0] = (s[p + j + 4] & 15) | ((s[p + j - 4] >> 6) << 4);
    sm[1] = (s[p + j + 4] >> 4) | ((s[p + j] >> 6) << 4);
  }
}

/** Scratch of chunkScalesK (synchronous, so one is enough). */
const SCALE_MIN = new Uint8Array(2);

/** Q4_K / Q5_K block at `b`: [scale, min] of chunk c's two sub-blocks (2c, 2c + 1), as [d1, m1, d2, m2] in `dm`. */
function chunkScalesK(s: Uint8Array, b: number, c: number, d: number, dmin: number, dm: Float64Array): void {
  const sm = SCALE_MIN;
  scaleMinK4(s, b + 4, 2 * c, sm);
  dm[0] = d * sm[0];
  dm[1] = dmin * sm[1];
  scaleMinK4(s, b + 4, 2 * c + 1, sm);
  dm[2] = d * sm[0];
  dm[3] = dmin * sm[1];
}

// Q4_K: fp16 d, fp16 dmin, scales[12], qs[128]; 8 sub-blocks of 32, value = d·sc·q − dmin·m.
// Chunk c (64 values): low nibbles of qs[32c..] are sub-block 2c, high nibbles sub-block 2c + 1.
const q4_K: BlockDecoder = (s, out, n) => {
  const dm = new Float64Array(4);
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 144, o += 256) {
    const d = half(s, b);
    const dmin = half(s, b + 2);
    for (let c = 0; c < 4; c++) {
      chunkScalesK(s, b, c, d, dmin, dm);
      const [d1, m1, d2, m2] = dm;
      const q = b + 16 + 32 * c;
      const y = o + 64 * c;
      for (let l = 0; l < 32; l++) {
        out[y + l] = d1 * (s[q + l] & 15) - m1;
        out[y + 32 + l] = d2 * (s[q + l] >> 4) - m2;
      }
    }
  }
};

// Q5_K: as Q4_K plus qh[32]: bit 2c of qh[l] is the 5th bit of low-nibble value l of chunk c, bit 2c + 1 of the high one.
const q5_K: BlockDecoder = (s, out, n) => {
  const dm = new Float64Array(4);
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 176, o += 256) {
    const d = half(s, b);
    const dmin = half(s, b + 2);
    const qh = b + 16;
    for (let c = 0; c < 4; c++) {
      chunkScalesK(s, b, c, d, dmin, dm);
      const [d1, m1, d2, m2] = dm;
      const u1 = 1 << (2 * c);
      const u2 = 2 << (2 * c);
      const q = b + 48 + 32 * c;
      const y = o + 64 * c;
      for (let l = 0; l < 32; l++) {
        out[y + l] = d1 * ((s[q + l] & 15) + (s[qh + l] & u1 ? 16 : 0)) - m1;
        out[y + 32 + l] = d2 * ((s[q + l] >> 4) + (s[qh + l] & u2 ? 16 : 0)) - m2;
      }
    }
  }
};

// Q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], fp16 d; value = d·sc·(q − 32).
const q6_K: BlockDecoder = (s, out, n) => {
  for (let i = 0, b = 0, o = 0; i < n; i++, b += 210, o += 256) {
    const d = half(s, b + 208);
    for (let h = 0; h < 2; h++) {
      const ql = b + 64 * h;
      const qh = b + 128 + 32 * h;
      const sc = b + 192 + 8 * h;
      const y = o + 128 * h;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const a = s[ql + l];
        const c = s[ql + l + 32];
        const hb = s[qh + l];
        out[y + l] = d * ((s[sc + is] << 24) >> 24) * (((a & 15) | ((hb & 3) << 4)) - 32);
        out[y + l + 32] = d * ((s[sc + is + 2] << 24) >> 24) * (((c & 15) | (((hb >> 2) & 3) << 4)) - 32);
        out[y + l + 64] = d * ((s[sc + is + 4] << 24) >> 24) * (((a >> 4) | (((hb >> 4) & 3) << 4)) - 32);
        out[y + l + 96] = d * ((s[sc + is + 6] << 24) >> 24) * (((c >> 4) | (((hb >> 6) & 3) << 4)) - 32);
      }
    }
  }
};

const DECODERS: Record<number, BlockDecoder> = byGgmlType({ f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K });

/** True when {@link dequantize} can decode `type`. */
export const canDequantize = (type: number): boolean => type in DECODERS;

/**
 * Decodes `count` values of ggml `type` from `src` (the tensor's bytes, little-endian) into a
 * new Float32Array, or into `out` when given.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a type this module cannot decode;
 *   TS_ERR_CORRUPT_WEIGHTS when `src` is shorter than `count` values need
 */
export function dequantize(type: number, src: Uint8Array, count: number, out = new Float32Array(count)): Float32Array {
  const decode = DECODERS[type];
  const layout = ggmlTypeLayout(type);
  if (!decode || !layout) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `cannot dequantize ggml ${ggmlTypeName(type)}`);
  if (count % layout.blockSize !== 0) {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${count} values are not whole ${layout.name} blocks of ${layout.blockSize}`);
  }
  const nBlocks = count / layout.blockSize;
  if (src.byteLength < nBlocks * layout.typeSize) {
    throw new TurnstreamError(
      ErrorCodes.CORRUPT_WEIGHTS,
      `${layout.name} data of ${src.byteLength} bytes is short of the ${nBlocks * layout.typeSize} that ${count} values need`,
    );
  }
  if (out.length < count) throw new TurnstreamError(ErrorCodes.INTERNAL, `output of ${out.length} values for ${count}`);
  decode(src, out, nBlocks);
  return out;
}

/** Decodes a whole tensor of `dims` (ne0 first). */
export const dequantizeTensor = (type: number, src: Uint8Array, dims: readonly number[]): Float32Array =>
  dequantize(type, src, elementCount(dims));
