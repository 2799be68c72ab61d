import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { ErrorCodes, TurnstreamError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';

export type BackendName = 'tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu';

export interface SelectBackendOptions {
  /** Receives one info line with the choice (and debug lines for what was not available). */
  logger?: Pick<Logger, 'info' | 'debug'>;
  /**
   * tfjs production mode: skips debug checks and the console banner about tfjs-node.
   * @default true
   */
  prodMode?: boolean;
}

/**
 * Order tried when nothing is preferred. The native bindings come first; of the two pure-JS
 * backends wasm is much faster for the built-in model (bench/trainer-backend.ts, default config,
 * 2 shared cores: generation 167 vs 44 tokens/s, a [8, 128] training step 3.2 s vs 17.9 s).
 */
export const BACKEND_ORDER: readonly BackendName[] = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'];

// Held in variables so TypeScript does not try to resolve optional packages.
const NODE_GPU_PKG = '@tensorflow/tfjs-node-gpu';
const NODE_PKG = '@tensorflow/tfjs-node';

let selected: BackendName | null = null;

async function tryBackend(name: BackendName): Promise<boolean> {
  switch (name) {
    case 'tensorflow-gpu':
    case 'tensorflow': {
      try {
        await import(name === 'tensorflow' ? NODE_PKG : NODE_GPU_PKG);
      } catch {
        return false; // not installed on this machine: an expected, optional dependency
      }
      return tf.setBackend('tensorflow');
    }
    case 'wasm': {
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      const require = createRequire(import.meta.url);
      const dist = dirname(require.resolve('@tensorflow/tfjs-backend-wasm'));
      wasm.setWasmPaths(dist + '/');
      return tf.setBackend('wasm');
    }
    case 'cpu':
      return tf.setBackend('cpu');
  }
}

/**
 * Picks the tfjs backend: `preferred` first when given, then the native TensorFlow bindings
 * (`@tensorflow/tfjs-node-gpu`, `@tensorflow/tfjs-node`; optional packages, loaded by dynamic
 * import when installed), then wasm, then cpu. Returns the name of the backend now in use.
 * Calling it again with no preference keeps the current choice.
 */
export async function selectBackend(preferred?: BackendName, opts: SelectBackendOptions = {}): Promise<BackendName> {
  if (opts.prodMode ?? true) tf.enableProdMode();
  if (selected && (!preferred || preferred === selected)) return selected;
  const order = preferred ? [preferred, ...BACKEND_ORDER.filter((b) => b !== preferred)] : BACKEND_ORDER;
  for (const name of order) {
    let ok = false;
    try {
      ok = await tryBackend(name);
    } catch (err) {
      opts.logger?.debug({ backend: name, err }, 'tfjs backend failed to start');
    }
    if (ok) {
      await tf.ready();
      selected = name;
      opts.logger?.info({ backend: name, preferred: preferred ?? null }, 'tfjs backend selected');
      return name;
    }
    opts.logger?.debug({ backend: name }, 'tfjs backend not available');
  }
  throw new TurnstreamError(ErrorCodes.PREREQUISITE, 'no tfjs backend could be started');
}

/** The backend chosen by `selectBackend`, or null before it ran. */
export function selectedBackend(): BackendName | null {
  return selected;
}
