import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';

/** Tiny shapes so the whole trainer suite stays fast on two cores. */
export const TINY = { contextLength: 48, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 } as const;

export function close(actual: number, expected: number, tol = 1e-5, msg?: string): void {
  assert.ok(Math.abs(actual - expected) <= tol, `${msg ?? ''} expected ${expected}, got ${actual} (tol ${tol})`);
}

export function closeArray(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5): void {
  assert.equal(actual.length, expected.length, 'length');
  for (let i = 0; i < expected.length; i++) close(actual[i], expected[i], tol, `[${i}]`);
}

export const val = (t: tf.Tensor): number => t.dataSync()[0];
export const arr = (t: tf.Tensor): number[] => Array.from(t.dataSync());
