/** The eval's paired permutation test. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pairedPermutationTest } from '../../../eval/stats.ts';

test('pairedPermutationTest: exact over all sign patterns', () => {
  // Four runs that all improved by the same amount: only the all-plus and all-minus patterns are as extreme.
  const r = pairedPermutationTest([0.1, 0.2, 0.3, 0.4], [0.3, 0.4, 0.5, 0.6]);
  assert.equal(r.exact, true);
  assert.equal(r.n, 4);
  assert.ok(Math.abs(r.meanDiff - 0.2) < 1e-12);
  assert.equal(r.p, 2 / 16);
  assert.equal(pairedPermutationTest([0.5, 0.5], [0.5, 0.5]).p, 1);
});

test('pairedPermutationTest: Monte-Carlo (more than 20 runs) counts the observed pattern, so p is never 0', () => {
  const before = Array.from({ length: 30 }, () => 0);
  const after = Array.from({ length: 30 }, (_, i) => 0.5 + i / 100);
  const r = pairedPermutationTest(before, after);
  assert.equal(r.exact, false);
  // Every run improved: no random pattern of 200 000 reaches the observed sum, only the observed one.
  assert.equal(r.p, 1 / 200_001);
  const mixed = pairedPermutationTest(
    before,
    after.map((x, i) => (i % 2 ? x : -x)),
  );
  assert.ok(mixed.p > 0.5, String(mixed.p));
});
