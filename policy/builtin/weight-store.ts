import { cp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TransformerModel, type ModelConfig } from './model.ts';
import { checkpointPath, readManifest, saveCheckpoint, type SavedCheckpoint } from './checkpoint.ts';
import { ByteTokenizer } from './tokenizer.ts';
import { completeVersions } from '../models/version-dirs.ts';

export interface WeightVersionRef {
  modelId: string;
  version: number;
  /** Checkpoint folder. */
  uri: string;
  sha256: string;
}

/** The folder of checkpoints: `<weightsDir>/<modelId>/v<version>/{model.json,weights.bin}`. */
export class WeightStore {
  readonly weightsDir: string;

  constructor(weightsDir: string) {
    this.weightsDir = weightsDir;
  }

  /** Folder of one version (it may not exist). */
  path(modelId: string, version: number): string {
    return checkpointPath(this.weightsDir, modelId, version);
  }

  /** Complete versions of a model (those with a model.json), ascending. */
  async list(modelId: string): Promise<number[]> {
    const dir = join(this.weightsDir, modelId);
    this.path(modelId, 0); // validates the id
    return completeVersions(dir, 'model.json');
  }

  /** The newest version, or null when the model has none. */
  async latest(modelId: string): Promise<WeightVersionRef | null> {
    const versions = await this.list(modelId);
    if (versions.length === 0) return null;
    const version = versions[versions.length - 1];
    return this.ref(modelId, version);
  }

  /** A version's reference (reads its model.json). */
  async ref(modelId: string, version: number): Promise<WeightVersionRef> {
    const uri = this.path(modelId, version);
    const manifest = await readManifest(uri);
    return { modelId, version, uri, sha256: manifest.sha256 };
  }
}

export interface InitCheckpointOptions {
  /** @default 'turnstream-tiny' */
  modelId?: string;
  /**
   * Seed of the random init.
   * @default 0
   */
  seed?: number;
  /** Model shape; the vocabulary comes from the byte tokenizer. @default DEFAULT_MODEL_CONFIG */
  config?: Partial<Omit<ModelConfig, 'vocabSize'>>;
  /**
   * Weight store holding a pretrained version 0 to copy instead of a random init; `false` forces
   * the random init. Used only when neither `config` nor `seed` is given.
   * @default SHIPPED_BASE_DIR (the pretrained base shipped in the repository, when present)
   */
  base?: string | false;
}

/** The weight store shipped in the repository: `policy/builtin/base/<modelId>/v0` (built by `turnstream pretrain`). */
export const SHIPPED_BASE_DIR = fileURLToPath(new URL('./base/', import.meta.url));

/**
 * Creates version 0 of a model — a copy of the pretrained base shipped in the repository when it
 * exists (and no `config` / `seed` asks for something else), else a random init — or returns the
 * existing version 0 untouched (idempotent, so `turnstream up` can call it every time).
 */
export async function initCheckpoint(weightsDir: string, opts: InitCheckpointOptions = {}): Promise<WeightVersionRef> {
  const modelId = opts.modelId ?? 'turnstream-tiny';
  const seed = opts.seed ?? 0;
  const store = new WeightStore(weightsDir);
  if ((await store.list(modelId)).includes(0)) return store.ref(modelId, 0);
  const base = opts.base ?? SHIPPED_BASE_DIR;
  if (base !== false && opts.config === undefined && opts.seed === undefined && (await new WeightStore(base).list(modelId)).includes(0)) {
    const src = checkpointPath(base, modelId, 0);
    await readManifest(src); // refuses a broken shipped copy rather than spreading it
    const dst = store.path(modelId, 0);
    const tmp = `${dst}.tmp-${process.pid}-${Date.now()}`;
    await cp(src, tmp, { recursive: true });
    try {
      await rename(tmp, dst);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      if (!(await store.list(modelId)).includes(0)) throw err;
    }
    return store.ref(modelId, 0);
  }
  const model = TransformerModel.init({ ...opts.config, vocabSize: new ByteTokenizer().vocabSize }, seed);
  let saved: SavedCheckpoint;
  try {
    saved = await saveCheckpoint(model, { weightsDir, modelId, version: 0, baseModel: `random-init(seed=${seed})` });
  } catch (err) {
    // Another process may have created it at the same time.
    if ((await store.list(modelId)).includes(0)) return store.ref(modelId, 0);
    throw err;
  } finally {
    model.dispose();
  }
  return { modelId, version: 0, uri: saved.uri, sha256: saved.sha256 };
}
