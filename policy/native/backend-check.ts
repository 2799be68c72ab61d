/**
 * A backend that loads but computes wrong must not train silently: a few known results, computed
 * here in plain double-precision JavaScript, against the backend's own — a matMul of the shapes
 * the model uses, a log-softmax over a row, and the gradient of a small tanh layer (the
 * backward pass of a matMul both ways). Takes a few milliseconds.
 */
import * as tf from '@tensorflow/tfjs';

/** The outcome of {@link checkBackendResults}. */
export interface BackendCheck {
  ok: boolean;
  /** The largest relative error seen, and where; or what failed. */
  detail: string;
}

const value = (i: number, j: number, seed: number): number => Math.sin(i * 12.9898 + j * 78.233 + seed) * 0.5;

function matrix(rows: number, cols: number, seed: number): number[][] {
  return Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => value(i, j, seed)));
}

function matMul(a: number[][], b: number[][]): number[][] {
  return a.map((row) => b[0].map((_, j) => row.reduce((s, x, k) => s + x * b[k][j], 0)));
}

const transpose = (a: number[][]): number[][] => a[0].map((_, j) => a.map((row) => row[j]));

/** Largest |got − want| ÷ max(1, |want|) over all entries. */
function relError(got: ArrayLike<number>, want: number[][]): number {
  const flat = want.flat();
  let worst = 0;
  for (let i = 0; i < flat.length; i++) worst = Math.max(worst, Math.abs(got[i] - flat[i]) / Math.max(1, Math.abs(flat[i])));
  return worst;
}

/**
 * Runs the checks on the current tfjs backend.
 * @param tolerance largest relative error accepted (float32 sums of 64 terms stay far below it)
 */
export async function checkBackendResults(tolerance = 1e-3): Promise<BackendCheck> {
  const x = matrix(8, 64, 1);
  const w = matrix(64, 24, 2);
  const xw = matMul(x, w);
  // f(x) = Σ tanh(x·W), so ∂f/∂x = (1 − tanh²(x·W))·Wᵀ
  const dtanh = xw.map((row) => row.map((v) => 1 - Math.tanh(v) ** 2));
  const gradWant = matMul(dtanh, transpose(w));
  const logits = matrix(3, 50, 3).map((row) => row.map((v) => v * 8));
  const lsmWant = logits.map((row) => {
    const m = Math.max(...row);
    const lse = m + Math.log(row.reduce((s, v) => s + Math.exp(v - m), 0));
    return row.map((v) => v - lse);
  });
  try {
    const [mm, lsm, grad] = tf.tidy(() => {
      const tx = tf.tensor2d(x);
      const tw = tf.tensor2d(w);
      const g = tf.grad((a: tf.Tensor) => tf.tanh(tf.matMul(a as tf.Tensor2D, tw)).sum())(tx);
      return [tf.matMul(tx, tw), tf.logSoftmax(tf.tensor2d(logits)), g];
    });
    const results: Array<[string, number]> = [
      ['matMul', relError(await mm.data(), xw)],
      ['logSoftmax', relError(await lsm.data(), lsmWant)],
      ['gradient', relError(await grad.data(), gradWant)],
    ];
    tf.dispose([mm, lsm, grad]);
    const [name, worst] = results.reduce((a, b) => (b[1] > a[1] || Number.isNaN(b[1]) ? b : a));
    const ok = results.every(([, e]) => e <= tolerance);
    return { ok, detail: `${ok ? 'largest' : 'wrong result:'} relative error ${worst.toExponential(2)} (${name}, tolerance ${tolerance})` };
  } catch (err) {
    return { ok: false, detail: `the check failed to run: ${(err as Error).message}` };
  }
}
