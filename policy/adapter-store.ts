/**
 * The weight store of models served by llama.cpp: every version is a LoRA adapter on one frozen
 * GGUF base, `<weightsDir>/<modelId>/v<N>/{adapter.gguf, adapter.json}`. Version 0 is the base
 * itself (a manifest, no adapter). Each version has a file of its own because llama.cpp caches
 * adapters by path. Folders are written under a temporary name and renamed into place, so a
 * reader never sees half a version; versions are immutable.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCodes, TurnstreamError, invalidInput } from '../core/index.ts';
import type { WeightVersion } from '../schemas/index.ts';
import type { LoraConfig } from './llama/lora.ts';
import { sha256File } from './models/file-sha256.ts';
import { completeVersions } from './models/version-dirs.ts';
import type { RemoteWeights } from './weight-transport.ts';

export const ADAPTER_FORMAT = 'gguf-lora-v1';

/** `adapter.json`. */
export interface AdapterManifest {
  format: typeof ADAPTER_FORMAT;
  modelId: string;
  version: number;
  /** Null for version 0. */
  parentVersion: number | null;
  /** The base checkpoint: its name and the sha256 of its GGUF file. */
  base: { name: string; sha256: string };
  /** Null for version 0 (no adapter). */
  lora: LoraConfig | null;
  /** sha256 of adapter.gguf; for version 0 the base's sha256. */
  sha256: string;
  createdAt: string;
  metrics?: Record<string, number>;
}

export interface AdapterVersionRef {
  modelId: string;
  version: number;
  /** The version's folder. */
  uri: string;
  /** adapter.gguf, or null for version 0. */
  adapterPath: string | null;
  manifest: AdapterManifest;
}

const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** How a WeightVersion names its base: `name@sha256:<hex>`. */
export function baseModelRef(base: { name: string; sha256: string }): string {
  return `${base.name}@sha256:${base.sha256}`;
}

/**
 * The WeightVersion that announces a LoRA version written without training (a benchmark's or a
 * test's): parent `version - 1`, the adapter format, its base, and placeholder metrics (one
 * sample, one token, `steps` the version).
 */
export function untrainedLoraVersion(
  v: { modelId: string; version: number; uri: string; sha256: string; base: { name: string; sha256: string } },
  createdAt = Date.now(),
): WeightVersion {
  return {
    modelId: v.modelId,
    version: v.version,
    parentVersion: v.version - 1,
    uri: v.uri,
    sha256: v.sha256,
    format: ADAPTER_FORMAT,
    baseModel: baseModelRef(v.base),
    metrics: { loss: 0, meanReward: 0, kl: 0, clipFraction: 0, samples: 1, tokens: 1, logprobDrift: 0, droppedStale: 0, steps: v.version },
    createdAt,
  };
}

export class AdapterStore {
  /**
   * @param remote where a version the folder lacks is fetched from when asked for by number (a
   * gateway's pinned `model@N`, policy/weight-transport.ts). @default none: NOT_FOUND
   */
  constructor(
    readonly weightsDir: string,
    private readonly remote?: RemoteWeights,
  ) {}

  path(modelId: string, version: number): string {
    if (!MODEL_ID.test(modelId)) throw invalidInput(`invalid model id ${JSON.stringify(modelId)}`, 'modelId');
    if (!Number.isInteger(version) || version < 0) throw invalidInput(`invalid version ${version}`, 'version');
    return join(this.weightsDir, modelId, `v${version}`);
  }

  /** Complete versions (those with an adapter.json), ascending. */
  async list(modelId: string): Promise<number[]> {
    const dir = join(this.weightsDir, modelId);
    this.path(modelId, 0);
    return completeVersions(dir, 'adapter.json');
  }

  /** A version's manifest and files; NOT_FOUND when absent, CORRUPT_WEIGHTS when unreadable. */
  async ref(modelId: string, version: number): Promise<AdapterVersionRef> {
    const uri = this.path(modelId, version);
    let text: string;
    try {
      text = await readFile(join(uri, 'adapter.json'), 'utf8');
    } catch (err) {
      if (!(this.remote && (err as NodeJS.ErrnoException).code === 'ENOENT' && (await this.remote.fetch(modelId, version, uri)))) {
        throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no version ${version} of ${modelId} in ${this.weightsDir}`, { cause: err });
      }
      text = await readFile(join(uri, 'adapter.json'), 'utf8');
    }
    let manifest: AdapterManifest;
    try {
      manifest = JSON.parse(text) as AdapterManifest;
    } catch (err) {
      throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${uri}/adapter.json is not JSON`, { cause: err });
    }
    if (manifest.format !== ADAPTER_FORMAT || manifest.version !== version || manifest.modelId !== modelId) {
      throw new TurnstreamError(
        ErrorCodes.CORRUPT_WEIGHTS,
        `${uri}/adapter.json does not describe ${modelId} v${version} (${ADAPTER_FORMAT})`,
      );
    }
    return { modelId, version, uri, adapterPath: manifest.lora ? join(uri, 'adapter.gguf') : null, manifest };
  }

  async latest(modelId: string): Promise<AdapterVersionRef | null> {
    const versions = await this.list(modelId);
    return versions.length > 0 ? this.ref(modelId, versions[versions.length - 1]) : null;
  }

  /** Checks the adapter file against the manifest's (or the given) sha256. */
  async verify(ref: AdapterVersionRef, expectedSha256?: string): Promise<void> {
    const want = expectedSha256 ?? ref.manifest.sha256;
    if (want !== ref.manifest.sha256) {
      throw new TurnstreamError(
        ErrorCodes.CORRUPT_WEIGHTS,
        `${ref.modelId} v${ref.version}: announced sha256 ${want} is not the manifest's ${ref.manifest.sha256}`,
      );
    }
    if (!ref.adapterPath) return;
    const got = await sha256File(ref.adapterPath);
    if (got !== want) throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `${ref.adapterPath} has sha256 ${got}, expected ${want}`);
  }

  /** Version 0 (the base, no adapter), created once; returns the existing one unchanged. */
  async ensureBase(modelId: string, base: { name: string; sha256: string }): Promise<AdapterVersionRef> {
    if ((await this.list(modelId)).includes(0)) {
      const ref = await this.ref(modelId, 0);
      if (ref.manifest.base.sha256 !== base.sha256) {
        throw new TurnstreamError(
          ErrorCodes.INVALID_INPUT,
          `the weight store's ${modelId} was trained on another base (sha256 ${ref.manifest.base.sha256}); use another model id or weights dir`,
          { param: 'model' },
        );
      }
      return ref;
    }
    return this.write({ modelId, version: 0, parentVersion: null, base, lora: null, metrics: undefined }, null);
  }

  /**
   * Writes a version: `writeAdapter(path)` writes adapter.gguf into the temporary folder (null
   * for version 0), then the manifest is written and the folder renamed into place.
   */
  async write(
    meta: Omit<AdapterManifest, 'format' | 'sha256' | 'createdAt'>,
    writeAdapter: ((path: string) => Promise<void>) | null,
  ): Promise<AdapterVersionRef> {
    const dir = this.path(meta.modelId, meta.version);
    try {
      await stat(dir);
      throw invalidInput(`${dir} already exists; versions are immutable`, 'version');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    await mkdir(tmp, { recursive: true });
    try {
      let sha256 = meta.base.sha256;
      if (writeAdapter) {
        await writeAdapter(join(tmp, 'adapter.gguf'));
        sha256 = await sha256File(join(tmp, 'adapter.gguf'));
      }
      const manifest: AdapterManifest = { format: ADAPTER_FORMAT, ...meta, sha256, createdAt: new Date().toISOString() };
      if (!manifest.metrics) delete manifest.metrics;
      await writeFile(join(tmp, 'adapter.json'), JSON.stringify(manifest, null, 2) + '\n', { flush: true });
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      // Another process may have created the same version 0 meanwhile.
      if (meta.version === 0 && (await this.list(meta.modelId)).includes(0)) return this.ref(meta.modelId, 0);
      throw err;
    }
    return this.ref(meta.modelId, meta.version);
  }
}
