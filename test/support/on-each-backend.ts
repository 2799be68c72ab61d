/** The trainer's two tfjs backends, native TensorFlow (the default) and wasm (the fallback): one suite for each. */
import assert from 'node:assert/strict';
import { before, describe } from 'node:test';
import { selectBackend } from '../../policy/tfjs-backend.ts';

/** Declares the suite `on <backend>` for each backend, the backend selected before its tests; `body` declares them. */
export function onEachBackend(body: (backend: 'tensorflow' | 'wasm') => void): void {
  for (const backend of ['tensorflow', 'wasm'] as const) {
    describe(`on ${backend}`, () => {
      before(async () => {
        assert.equal(await selectBackend(backend), backend);
      });
      body(backend);
    });
  }
}
