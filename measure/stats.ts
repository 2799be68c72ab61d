/** Small statistics for the evaluation: a paired sign-flip permutation test and summaries. */
import { mulberry32 } from '../core/index.ts';

export const mean = (a: readonly number[]): number => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : NaN);

export function sd(a: readonly number[]): number {
  if (a.length < 2) return 0;
  const m = mean(a);
  return Math.sqrt(a.reduce((s, x) => s + (x - m) ** 2, 0) / (a.length - 1));
}

export interface PairedTest {
  test: 'paired sign-flip permutation (two-sided)';
  n: number;
  meanDiff: number;
  /** Paired t statistic (for reference; the p-value is the permutation one). */
  t: number;
  p: number;
  /** Exact (all 2^n sign patterns) or Monte-Carlo. */
  exact: boolean;
}

/** How {@link pairedPermutationTest} counts sign patterns. */
export interface PermutationOptions {
  /** Every one of the 2^n sign patterns is counted up to this many pairs. @default PERMUTATION_DEFAULTS.exactUpTo (20) */
  exactUpTo?: number;
  /** Random sign patterns drawn above it. @default PERMUTATION_DEFAULTS.draws (200 000) */
  draws?: number;
  /** Seed of the draws (core's mulberry32). @default PERMUTATION_DEFAULTS.seed */
  seed?: number;
}

export const PERMUTATION_DEFAULTS: Readonly<Required<PermutationOptions>> = Object.freeze({ exactUpTo: 20, draws: 200_000, seed: 12345 });

/** |Σ ±d| ≥ observed, with room for the rounding of sums of fractions. */
const EPS = 1e-12;

/** Patterns of all 2^n signs whose |sum| reaches `observed`. */
function exactHits(d: Float64Array, observed: number): number {
  const n = d.length;
  let hits = 0;
  for (let mask = 0; mask < 2 ** n; mask++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += mask & (1 << i) ? -d[i] : d[i];
    if (Math.abs(sum) >= observed - EPS) hits++;
  }
  return hits;
}

/** Of `draws` sign patterns drawn from mulberry32 (32 signs per draw of it), those whose |sum| reaches `observed`. */
function drawnHits(d: Float64Array, observed: number, draws: number, seed: number): number {
  const rand = mulberry32(seed);
  const n = d.length;
  let hits = 0;
  for (let k = 0; k < draws; k++) {
    let sum = 0;
    let bits = 0;
    for (let i = 0; i < n; i++) {
      if (i % 32 === 0) bits = (rand() * 4294967296) >>> 0;
      sum += bits & 1 ? -d[i] : d[i];
      bits >>>= 1;
    }
    if (Math.abs(sum) >= observed - EPS) hits++;
  }
  return hits;
}

/**
 * Two-sided paired permutation test of `after − before`: under H0 each difference's sign is
 * exchangeable, so p = share of sign patterns whose |mean| is at least the observed one.
 * Exact (all 2^n patterns) for n ≤ `exactUpTo`; above it `draws` random patterns from core's
 * mulberry32, counting the observed pattern among them so that a Monte-Carlo p is never 0 (its
 * smallest value is 1/(draws + 1)).
 */
export function pairedPermutationTest(before: readonly number[], after: readonly number[], options: PermutationOptions = {}): PairedTest {
  const o = { ...PERMUTATION_DEFAULTS, ...options };
  const d = Float64Array.from(after, (x, i) => x - before[i]);
  const n = d.length;
  const observed = Math.abs(d.reduce((a, b) => a + b, 0));
  const s = sd([...d]);
  const m = mean([...d]);
  const t = s > 0 ? m / (s / Math.sqrt(n)) : m === 0 ? 0 : Infinity;
  const exact = n <= o.exactUpTo;
  const p = exact ? exactHits(d, observed) / 2 ** n : (drawnHits(d, observed, o.draws, o.seed) + 1) / (o.draws + 1);
  return { test: 'paired sign-flip permutation (two-sided)', n, meanDiff: m, t, p, exact };
}
