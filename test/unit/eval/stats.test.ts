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
