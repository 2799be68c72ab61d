import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { ErrorCodes, pathExists, TurnstreamError, invalidInput } from '../../core/index.ts';
import { resolveModelConfig, TransformerModel, weightShapes, type ModelConfig } from './model.ts';

export const CHECKPOINT_FORMAT = 'turnstream-tfjs-v1';

export interface TensorEntry {
  name: string;
  shape: number[];
  dtype: 'float32';
  /** Byte offset in weights.bin. */
  offset: number;
  byteLength: number;
}

/** Contents of `model.json`. */
export interface CheckpointManifest {
  format: typeof CHECKPOINT_FORMAT;
  modelId: string;
  version: number;
  /** Version this one was trained from; null for an initial checkpoint. */
  parentVersion: number | null;
  /** What the lineage started from (e.g. `random-init(seed=0)` or a pretraining run). */
  baseModel: string | null;
  config: ModelConfig;
  tensors: TensorEntry[];
  /** sha256 (hex) of weights.bin. */
  sha256: string;
  createdAt: string;
  /** Training metrics of the step that produced this version. */
  metrics?: Record<string, number>;
}

export interface SaveCheckpointOptions {
  /** Root folder of the weight store. */
  weightsDir: string;
  modelId: string;
  version: number;
  /** @default null */
  parentVersion?: number | null;
  /** @default null */
  baseModel?: string | null;
  metrics?: Record<string, number>;
}

export interface SavedCheckpoint {
  /** Folder of the checkpoint (`<weightsDir>/<modelId>/v<version>`). */
  uri: string;
  sha256: string;
  manifest: CheckpointManifest;
}

const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Folder of one version. */
export function checkpointPath(weightsDir: string, modelId: string, version: number): string {
  if (!MODEL_ID.test(modelId)) throw invalidInput(`invalid model id ${JSON.stringify(modelId)}`, 'modelId');
  if (!Number.isInteger(version) || version < 0) throw invalidInput(`invalid version ${version}`, 'version');
  return join(weightsDir, modelId, `v${version}`);
}

const sha256Hex = (buf: Uint8Array): string => createHash('sha256').update(buf).digest('hex');

/**
 * Writes `model.json` + `weights.bin` (float32, concatenated in `weightShapes` order) into a
 * temporary folder and renames it into place, so a reader never sees half a checkpoint.
 * Versions are immutable: saving over an existing version is an error.
 */
export async function saveCheckpoint(model: TransformerModel, opts: SaveCheckpointOptions): Promise<SavedCheckpoint> {
  const dir = checkpointPath(opts.weightsDir, opts.modelId, opts.version);
  if (await pathExists(dir)) throw invalidInput(`checkpoint ${dir} already exists; versions are immutable`, 'version');
  const tensors: TensorEntry[] = [];
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const { name, shape } of weightShapes(model.config)) {
    const v = model.weights.get(name)!;
    const data = (await v.data()) as Float32Array;
    const bytes = new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
    tensors.push({ name, shape, dtype: 'float32', offset, byteLength: bytes.byteLength });
    chunks.push(bytes);
    offset += bytes.byteLength;
  }
  const bin = Buffer.concat(chunks);
  const manifest: CheckpointManifest = {
    format: CHECKPOINT_FORMAT,
    modelId: opts.modelId,
    version: opts.version,
    parentVersion: opts.parentVersion ?? null,
    baseModel: opts.baseModel ?? null,
    config: model.config,
    tensors,
    sha256: sha256Hex(bin),
    createdAt: new Date().toISOString(),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
  };
  const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(tmp, { recursive: true });
  try {
    await writeFile(join(tmp, 'weights.bin'), bin, { flush: true });
    await writeFile(join(tmp, 'model.json'), JSON.stringify(manifest, null, 2) + '\n', { flush: true });
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  return { uri: dir, sha256: manifest.sha256, manifest };
}

export interface LoadCheckpointOptions {
  /** When given, weights.bin must have this sha256 (e.g. from the weights topic). */
  expectedSha256?: string;
}

/** Reads and validates `model.json` of a checkpoint folder (no weights). */
export async function readManifest(uri: string): Promise<CheckpointManifest> {
  const dir = uriToDir(uri);
  let text: string;
  try {
    text = await readFile(join(dir, 'model.json'), 'utf8');
  } catch (err) {
    throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no checkpoint at ${dir}`, { cause: err });
  }
  let m: CheckpointManifest;
  try {
    m = JSON.parse(text) as CheckpointManifest;
  } catch (err) {
    throw corrupt(`${dir}/model.json is not JSON`, err);
  }
  if (m?.format !== CHECKPOINT_FORMAT) throw corrupt(`${dir}: format ${JSON.stringify(m?.format)}, expected ${CHECKPOINT_FORMAT}`);
  try {
    m.config = resolveModelConfig(m.config);
  } catch (err) {
    throw corrupt(`${dir}: invalid model config`, err);
  }
  const expected = weightShapes(m.config);
  if (!Array.isArray(m.tensors) || m.tensors.length !== expected.length) throw corrupt(`${dir}: tensor list does not match the config`);
  let offset = 0;
  expected.forEach(({ name, shape }, i) => {
    const t = m.tensors[i];
    const size = shape.reduce((a, b) => a * b, 1);
    if (t.name !== name || t.dtype !== 'float32' || String(t.shape) !== String(shape) || t.offset !== offset || t.byteLength !== size * 4) {
      throw corrupt(`${dir}: tensor ${t?.name} [${t?.shape}] does not match ${name} [${shape}] of the config`);
    }
    offset += t.byteLength;
  });
  return m;
}

/**
 * Loads a checkpoint folder (a path, a `file://` URL, or the path of its model.json) and checks
 * the format, the tensor names and shapes against the config, and the sha256 of weights.bin
 * (against model.json and `expectedSha256`). Any mismatch is `TurnstreamError(CORRUPT_WEIGHTS)`.
 */
export async function loadCheckpoint(
  uri: string,
  opts: LoadCheckpointOptions = {},
): Promise<{ model: TransformerModel; manifest: CheckpointManifest }> {
  const dir = uriToDir(uri);
  const manifest = await readManifest(dir);
  let bin: Buffer;
  try {
    bin = await readFile(join(dir, 'weights.bin'));
  } catch (err) {
    throw corrupt(`${dir}/weights.bin cannot be read`, err);
  }
  const sha = sha256Hex(bin);
  if (sha !== manifest.sha256) throw corrupt(`${dir}/weights.bin has sha256 ${sha}, model.json says ${manifest.sha256}`);
  if (opts.expectedSha256 && sha !== opts.expectedSha256.toLowerCase()) {
    throw corrupt(`${dir}/weights.bin has sha256 ${sha}, expected ${opts.expectedSha256}`);
  }
  const total = manifest.tensors.reduce((a, t) => a + t.byteLength, 0);
  if (bin.byteLength !== total) throw corrupt(`${dir}/weights.bin has ${bin.byteLength} bytes, expected ${total}`);
  const values = new Map<string, tf.Tensor>();
  try {
    for (const t of manifest.tensors) {
      const data = new Float32Array(bin.buffer.slice(bin.byteOffset + t.offset, bin.byteOffset + t.offset + t.byteLength));
      values.set(t.name, tf.tensor(data, t.shape, 'float32'));
    }
    return { model: TransformerModel.fromTensors(manifest.config, values), manifest };
  } finally {
    for (const v of values.values()) v.dispose();
  }
}

function uriToDir(uri: string): string {
  const path = uri.startsWith('file://') ? fileURLToPath(uri) : uri;
  return path.endsWith('model.json') ? dirname(path) : path;
}

function corrupt(message: string, cause?: unknown): TurnstreamError {
  return new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, message, { cause });
}
