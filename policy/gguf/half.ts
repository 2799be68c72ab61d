/**
 * IEEE half (fp16) and bfloat16 conversions. Node 20 has no Float16Array, and the quant blocks
 * store their scales as fp16, so decoding goes through a 64 K-entry table built once.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function decodeHalf(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** fp16 bits → float, for every 16-bit pattern. */
export const HALF_TO_FLOAT: Float32Array = (() => {
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) table[h] = decodeHalf(h);
  return table;
})();

/** The fp16 bits nearest to `value` (round to nearest, ties to even, as the hardware does). */
export function floatToHalf(value: number): number {
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // A half subnormal (or zero): the value is mant24 · 2^(e − 24) with the implicit bit put back.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && half & 1)) half++;
    return sign | half;
  }
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++;
  return sign | half;
}

/** `value` rounded to the nearest fp16 number. */
export const roundToHalf = (value: number): number => HALF_TO_FLOAT[floatToHalf(value)];

/** bfloat16 bits → float. */
export function bfloat16ToFloat(b: number): number {
  u32[0] = b << 16;
  return f32[0];
}
