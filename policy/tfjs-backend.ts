import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import util from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { ErrorCodes, TurnstreamError, type Logger } from '../core/index.ts';
import { checkBackendResults } from './native/backend-check.ts';
import { detectCudaDevice, type CudaDevice } from './native/cuda-device.ts';
import { ensureNativeTensorflow, nativeBuildReady, type NativeInstallProgress } from './native/install-native-tensorflow.ts';
import { NATIVE_DISTS, type NativeDist, type NativeVariant } from './native/tensorflow-dist.ts';

export type BackendName = 'tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu';
/** A backend, or `auto`: native TensorFlow (GPU when a CUDA device is present), else wasm, else cpu. */
export type BackendPreference = 'auto' | BackendName;

/** How native TensorFlow is had. */
export interface NativeTensorflowOptions {
  /** The cache of built bindings. `TURNSTREAM_NATIVE_DIR` @default ~/.cache/turnstream/native */
  dir?: string;
  /** Fetch and build it when it is not in the cache (else only a cached build is used). @default true */
  install?: boolean;
  /** `off` never uses the GPU variant, even with a CUDA device. `TFJS_GPU` @default 'auto' */
  gpu?: 'auto' | 'off';
  /** Progress of a fetch and build (a first start takes a minute or two). @default undefined */
  onProgress?: (p: NativeInstallProgress) => void;
  /** What each variant is built from (tests give broken ones). @default NATIVE_DISTS */
  dists?: Readonly<Record<NativeVariant, NativeDist>>;
  /** Whether a CUDA device is present. @default detectCudaDevice() */
  cudaDevice?: CudaDevice;
}

export interface SelectBackendOptions {
  /** Receives one info line with the choice, one warning line for a native backend not had, and debug lines. */
  logger?: Pick<Logger, 'info' | 'debug' | 'warn'>;
  /**
   * tfjs production mode: skips debug checks and the console banner about tfjs-node.
   * @default true
   */
  prodMode?: boolean;
  /** @default the values set by {@link configureBackend}, else each field's default */
  native?: NativeTensorflowOptions;
}

/** Which backend runs, and why (`turnstream doctor`). */
export interface BackendStatus {
  backend: BackendName;
  preferred: BackendPreference;
  /** One line: why this backend. */
  reason: string;
  /** Why a faster backend was not used, with the fix; absent when the fastest one runs. */
  fallback?: string;
  /** The known-result check of the chosen backend. */
  check: string;
  /** The native build, when one is used. */
  native?: { variant: NativeVariant; buildDir: string; built: boolean; ms: number; gpuInUse: boolean };
  cudaDevice: string;
}

/**
 * Order tried after native TensorFlow. Of the two pure-JS backends wasm is much faster
 * (bench/trainer-backend.ts, default config, 2 shared cores: generation 167 vs 44 tokens/s, a
 * [8, 128] training step 3.2 s vs 17.9 s).
 */
export const BACKEND_ORDER: readonly BackendName[] = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'];

const VARIANT: Record<'tensorflow' | 'tensorflow-gpu', NativeVariant> = { tensorflow: 'cpu', 'tensorflow-gpu': 'gpu' };

let defaults: { preferred: BackendPreference; native: NativeTensorflowOptions } = { preferred: 'auto', native: {} };
let status: BackendStatus | null = null;
/** A native variant imported in this process: the other one can no longer be (both register `tensorflow`). */
let nativeLoaded: NativeVariant | null = null;

/** Sets what `selectBackend()` without arguments does (the CLI calls it with the configuration). */
export function configureBackend(options: { preferred?: BackendPreference; native?: NativeTensorflowOptions }): void {
  defaults = { preferred: options.preferred ?? defaults.preferred, native: { ...defaults.native, ...options.native } };
}

class Unavailable extends Error {}

/** Loads a native variant (building it first when needed) and makes it the backend; returns its details. */
async function loadNative(variant: NativeVariant, opts: NativeTensorflowOptions): Promise<NonNullable<BackendStatus['native']>> {
  if (nativeLoaded && nativeLoaded !== variant) throw new Unavailable(`the ${nativeLoaded} build is already loaded in this process`);
  const dir = opts.dir ?? join(homedir(), '.cache', 'turnstream', 'native');
  const dist = (opts.dists ?? NATIVE_DISTS)[variant];
  if (opts.install === false && !nativeBuildReady(dir, dist)) throw new Unavailable(`no ${variant} build in ${dir} (install is off)`);
  const install = await ensureNativeTensorflow({ dir, variant, dist, onProgress: opts.onProgress });
  // TensorFlow's C++ logging (oneDNN and CPU-feature banners) would go to stderr of every service.
  process.env.TF_CPP_MIN_LOG_LEVEL ??= '2';
  restoreUtilHelpers();
  await import(install.npmPackage);
  nativeLoaded = variant;
  if (!(await tf.setBackend('tensorflow'))) throw new Unavailable('the tensorflow backend did not initialize');
  const backend = tf.backend() as unknown as { isUsingGpuDevice?: boolean };
  return { variant, buildDir: install.buildDir, built: install.built, ms: install.ms, gpuInUse: backend.isUsingGpuDevice === true };
}

/** tfjs-node 4.22 calls `util.isNullOrUndefined` and `util.isArray`, which Node 23 removed (deprecated on 22). */
function restoreUtilHelpers(): void {
  const u = util as unknown as Record<string, unknown>;
  u.isNullOrUndefined = (v: unknown): boolean => v === null || v === undefined;
  u.isArray = Array.isArray;
}

async function loadPure(name: 'wasm' | 'cpu'): Promise<void> {
  if (name === 'wasm') {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    const require = createRequire(import.meta.url);
    wasm.setWasmPaths(dirname(require.resolve('@tensorflow/tfjs-backend-wasm')) + '/');
  }
  if (!(await tf.setBackend(name))) throw new Unavailable(`${name} did not initialize`);
}

const FIX_NATIVE = 'fix: TFJS_BACKEND=tensorflow turnstream doctor shows the failing step';

/**
 * Picks the tfjs backend. With no preference (`auto`): native TensorFlow (the GPU build when a
 * CUDA device is present, built on first use; see policy/native/), then wasm, then cpu; a native
 * backend not had is one warning line with the reason and the fix. A preferred backend is tried
 * first, then the same order. Every native backend must pass a known-result check before it is
 * used. Returns the name of the backend now in use; calling it again with no preference keeps it.
 */
export async function selectBackend(preferred?: BackendPreference, opts: SelectBackendOptions = {}): Promise<BackendName> {
  return (await selectBackendStatus(preferred, opts)).backend;
}

/** {@link selectBackend}, returning the whole {@link BackendStatus}. */
export async function selectBackendStatus(preferred?: BackendPreference, opts: SelectBackendOptions = {}): Promise<BackendStatus> {
  if (opts.prodMode ?? true) tf.enableProdMode();
  const want = preferred ?? defaults.preferred;
  if (status && (want === 'auto' || want === status.backend)) return status;
  const native = { ...defaults.native, ...opts.native };
  const cuda = native.cudaDevice ?? detectCudaDevice();
  const nativeOrder: BackendName[] = native.gpu !== 'off' && cuda.present ? ['tensorflow-gpu', 'tensorflow'] : ['tensorflow'];
  const order: BackendName[] =
    want === 'auto'
      ? [...nativeOrder, 'wasm', 'cpu']
      : [want, ...BACKEND_ORDER.filter((b) => b !== want && (b !== 'tensorflow-gpu' || cuda.present))];
  const misses: string[] = [];
  for (const name of order) {
    try {
      let details: BackendStatus['native'];
      if (name === 'tensorflow' || name === 'tensorflow-gpu') details = await loadNative(VARIANT[name], native);
      else await loadPure(name);
      await tf.ready();
      const check = await checkBackendResults();
      if (!check.ok) throw new Unavailable(`it computes wrong results: ${check.detail}`);
      if (details && name === 'tensorflow-gpu' && !details.gpuInUse)
        misses.push('tensorflow-gpu: the GPU build loaded but TensorFlow sees no GPU (CUDA driver or libraries), so it runs on the CPU');
      const fallback = misses.length ? misses.join('; ') : undefined;
      status = {
        backend: name,
        preferred: want,
        reason: reasonOf(name, want, details, cuda.present),
        ...(fallback ? { fallback } : {}),
        check: check.detail,
        ...(details ? { native: details } : {}),
        cudaDevice: cuda.detail,
      };
      if (fallback) {
        opts.logger?.warn({ backend: name, why: fallback }, `tfjs runs on ${name}, not native TensorFlow: ${fallback} (${FIX_NATIVE})`);
      }
      opts.logger?.info({ backend: name, preferred: want, check: check.detail, native: details ?? null }, `tfjs backend: ${name}`);
      return status;
    } catch (err) {
      const why = err instanceof Unavailable || err instanceof TurnstreamError ? err.message : `${(err as Error).message}`;
      misses.push(`${name}: ${why}`);
      opts.logger?.debug({ backend: name, err }, 'tfjs backend not available');
    }
  }
  throw new TurnstreamError(ErrorCodes.PREREQUISITE, `no tfjs backend could be started (${misses.join('; ')})`);
}

function reasonOf(name: BackendName, want: BackendPreference, native: BackendStatus['native'], cuda: boolean): string {
  if (want !== 'auto' && want === name) return `asked for (TFJS_BACKEND or --backend ${want})`;
  if (name === 'tensorflow-gpu') return `a CUDA device is present; native TensorFlow ${native?.built ? 'built now' : 'from the cache'}`;
  if (name === 'tensorflow')
    return `native TensorFlow on the CPU${cuda ? ' (the GPU build was not had)' : ''}, ${native?.built ? 'built now' : 'from the cache'}`;
  return `the fastest backend that started (native TensorFlow did not)`;
}

/** The backend chosen by `selectBackend`, or null before it ran. */
export function selectedBackend(): BackendName | null {
  return status?.backend ?? null;
}

/** What `selectBackend` chose and why, or null before it ran. */
export function backendStatus(): BackendStatus | null {
  return status;
}
