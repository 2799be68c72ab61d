/** Small statistics for the evaluation: a paired sign-flip permutation test and summaries. */

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

/**
 * Two-sided paired permutation test of `after − before`: under H0 each difference's sign is
 * exchangeable, so p = share of sign patterns whose |mean| is at least the observed one.
 * Exact for n ≤ 20, else 200 000 random patterns (seeded), counting the observed pattern among
 * them so that a Monte-Carlo p is never 0 (its smallest value is 1/200 001).
 */
export function pairedPermutationTest(before: readonly number[], after: readonly number[]): PairedTest {
  const d = after.map((x, i) => x - before[i]);
  const n = d.length;
  const observed = Math.abs(d.reduce((a, b) => a + b, 0));
  const s = sd(d);
  const t = s > 0 ? mean(d) / (s / Math.sqrt(n)) : mean(d) === 0 ? 0 : Infinity;
  let hits = 0;
  let total = 0;
  const eps = 1e-12;
  if (n <= 20) {
    for (let mask = 0; mask < 1 << n; mask++) {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += mask & (1 << i) ? -d[i] : d[i];
      if (Math.abs(sum) >= observed - eps) hits++;
      total++;
    }
  } else {
    let seed = 12345;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (; total < 200_000; total++) {
      let sum = 0;
      for (let i = 0; i < n; i++) sum += rand() < 0.5 ? -d[i] : d[i];
      if (Math.abs(sum) >= observed - eps) hits++;
    }
  }
  const p = n <= 20 ? hits / total : (hits + 1) / (total + 1);
  return { test: 'paired sign-flip permutation (two-sided)', n, meanDiff: mean(d), t, p, exact: n <= 20 };
}
