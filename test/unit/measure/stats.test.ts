/** The eval's paired permutation test. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pairedPermutationTest } from '../../../measure/stats.ts';

/**
 * The exact two-sided p of integer differences by meet in the middle: the 2^h sums of each half,
 * one half sorted, and for each sum of the other the count of partners with |a + b| ≥ observed.
 * Independent of the function under test (2^24 patterns in 2 × 4096 sums).
 */
function exactP(d: number[]): number {
  const halfSums = (xs: number[]): number[] =>
    Array.from({ length: 2 ** xs.length }, (_, mask) => xs.reduce((s, x, i) => s + (mask & (1 << i) ? -x : x), 0));
  const h = Math.floor(d.length / 2);
  const left = halfSums(d.slice(0, h));
  const right = halfSums(d.slice(h)).sort((a, b) => a - b);
  const observed = Math.abs(d.reduce((a, b) => a + b, 0));
  /** Index of the first element of `right` ≥ x. */
  const lowerBound = (x: number): number => {
    let lo = 0;
    let hi = right.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (right[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  let hits = 0;
  for (const a of left) {
    // a + b ≥ observed, or a + b ≤ −observed (observed > 0; both when it is 0).
    hits += right.length - lowerBound(observed - a);
    if (observed > 0) hits += lowerBound(-observed - a + 1);
  }
  if (observed === 0) hits = left.length * right.length;
  return hits / 2 ** d.length;
}

/** Integer differences of a run set with a known mix of gains and losses (as task pass counts are). */
const mixed = (n: number, seed: number): number[] => {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (s * 48271) % 2147483647;
    return (s % 7) - 2; // −2..4: mostly gains
  });
};

test('pairedPermutationTest: exact over all sign patterns', () => {
  // Four runs that all improved by the same amount: only the all-plus and all-minus patterns are as extreme.
  const r = pairedPermutationTest([0.1, 0.2, 0.3, 0.4], [0.3, 0.4, 0.5, 0.6]);
  assert.equal(r.exact, true);
  assert.equal(r.n, 4);
  assert.ok(Math.abs(r.meanDiff - 0.2) < 1e-12);
  assert.equal(r.p, 2 / 16);
  assert.equal(pairedPermutationTest([0.5, 0.5], [0.5, 0.5]).p, 1);
});

test('pairedPermutationTest: exact at n = 20 agrees with the meet-in-the-middle count', () => {
  const d = mixed(20, 7);
  const r = pairedPermutationTest(
    d.map(() => 0),
    d,
  );
  assert.equal(r.exact, true);
  assert.equal(r.p, exactP(d));
});

test('pairedPermutationTest: at n = 16 the Monte-Carlo p (mulberry32 draws) agrees with exact enumeration', () => {
  for (const seed of [3, 11, 29]) {
    const d = mixed(16, seed);
    const zeros = d.map(() => 0);
    const exact = pairedPermutationTest(zeros, d);
    const drawn = pairedPermutationTest(zeros, d, { exactUpTo: 0 });
    assert.equal(exact.exact, true);
    assert.equal(drawn.exact, false);
    assert.equal(exact.p, exactP(d));
    // Four standard errors of 200 000 draws.
    const se = Math.sqrt((exact.p * (1 - exact.p)) / 200_000);
    assert.ok(Math.abs(drawn.p - exact.p) <= 4 * se + 1e-5, `seed ${seed}: drawn ${drawn.p}, exact ${exact.p}`);
  }
});

test('pairedPermutationTest: at n = 24 the Monte-Carlo p agrees with the exact p of all 2^24 patterns', () => {
  // p 0.03, 0.21 and 0.35: the old LCG (cycling after ~10.5k draws) was 10–12 standard errors off on two of them.
  for (const [seed, tilt] of [
    [5, 0],
    [13, 1],
    [17, -1],
  ] as const) {
    const d = mixed(24, seed).map((x) => x - 1 + tilt);
    const exact = exactP(d);
    const r = pairedPermutationTest(
      d.map(() => 0),
      d,
    );
    assert.equal(r.exact, false);
    assert.equal(r.n, 24);
    const se = Math.sqrt((exact * (1 - exact)) / 200_000);
    assert.ok(Math.abs(r.p - exact) <= 4 * se + 2 / 200_001, `seed ${seed}: drawn ${r.p}, exact ${exact}`);
  }
  // All 24 differences equal and positive: p = 2 / 2^24 exactly; 200 000 draws see only the observed pattern.
  const ones = Array.from({ length: 24 }, () => 1);
  assert.equal(exactP(ones), 2 / 2 ** 24);
  assert.equal(
    pairedPermutationTest(
      ones.map(() => 0),
      ones,
    ).p,
    1 / 200_001,
  );
});

test('pairedPermutationTest: Monte-Carlo (more than 20 runs) counts the observed pattern, so p is never 0', () => {
  const before = Array.from({ length: 30 }, () => 0);
  const after = Array.from({ length: 30 }, (_, i) => 0.5 + i / 100);
  const r = pairedPermutationTest(before, after);
  assert.equal(r.exact, false);
  // Every run improved: no random pattern of 200 000 reaches the observed sum, only the observed one.
  assert.equal(r.p, 1 / 200_001);
  const mixedSigns = pairedPermutationTest(
    before,
    after.map((x, i) => (i % 2 ? x : -x)),
  );
  assert.ok(mixedSigns.p > 0.5, String(mixedSigns.p));
});
