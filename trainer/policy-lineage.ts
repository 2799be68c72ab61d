/**
 * The versions of one trained model, as the learner sees them: create version 0, load a version
 * as a trainable policy (verifying its sha256), and write the trained weights as the next
 * version. Two kinds:
 *
 * - `BuiltinLineage`: the built-in tiny model, every version a full checkpoint
 *   (policy/builtin/checkpoint.ts);
 * - `LoraLineage`: a Llama-family GGUF base, dequantized once and frozen, every version a LoRA
 *   adapter in llama.cpp's GGUF format (policy/adapter-store.ts), which the gateway loads as is.
 *
 * Both stores lay versions out as `<weightsDir>/<modelId>/v<N>/`, written under a temporary
 * name and renamed into place.
 */
import {
  AdapterStore,
  ADAPTER_FORMAT,
  baseModelRef,
  CHECKPOINT_FORMAT,
  DEFAULT_LORA,
  initCheckpoint,
  loadCheckpoint,
  loadTfLlama,
  LoraAdapter,
  llamaRuntime,
  openGguf,
  readLoraAdapter,
  saveCheckpoint,
  WeightStore,
  writeLoraAdapter,
  type LlamaConfig,
  type LoraConfig,
  type TfLlamaModel,
  type TransformerModel,
} from '../policy/index.ts';
import type { LlamaModel as NodeLlamaModel, Token } from 'node-llama-cpp';
import { ErrorCodes, TurnstreamError, type Logger } from '../core/index.ts';
import { builtinSampleText, type SampleText } from './consensus-weighting.ts';
import { BuiltinTrainable, LoraTrainable, type TrainablePolicy } from './trainable-policy.ts';

export interface LoadedVersion {
  policy: TrainablePolicy;
  /** Learner steps behind this version, when its files record them. */
  steps: number | null;
}

export interface SavedVersion {
  uri: string;
  sha256: string;
}

export interface PolicyLineage {
  readonly modelId: string;
  /** The WeightVersion `format`. */
  readonly format: string;
  /** What the lineage started from (the WeightVersion `baseModel`). */
  readonly baseModel: string;
  /** Creates version 0 when the store has none; returns its sha256. */
  init(): Promise<{ sha256: string }>;
  /** Complete versions in the store, ascending. */
  versions(): Promise<number[]>;
  /** The folder of a version (removed when a crash left it unpublished). */
  path(version: number): string;
  /** Loads a version as the policy to train (replacing any loaded before). */
  load(version: number, expectedSha256?: string): Promise<LoadedVersion>;
  /** How the consensus reads a sample as text (the model's tokenizer; call after `init`). */
  sampleText: SampleText;
  /** Writes the loaded policy's current weights as `version`. */
  save(version: number, parentVersion: number, metrics: Record<string, number>): Promise<SavedVersion>;
  dispose(): void;
}

export class BuiltinLineage implements PolicyLineage {
  readonly format = CHECKPOINT_FORMAT;
  readonly sampleText = builtinSampleText;
  private readonly store: WeightStore;
  private model: TransformerModel | null = null;
  private base: string | null = null;

  constructor(
    private readonly weightsDir: string,
    readonly modelId: string,
  ) {
    this.store = new WeightStore(weightsDir);
  }

  get baseModel(): string {
    return this.base ?? `${this.modelId}@v0`;
  }

  async init(): Promise<{ sha256: string }> {
    return initCheckpoint(this.weightsDir, { modelId: this.modelId });
  }

  versions(): Promise<number[]> {
    return this.store.list(this.modelId);
  }

  path(version: number): string {
    return this.store.path(this.modelId, version);
  }

  async load(version: number, expectedSha256?: string): Promise<LoadedVersion> {
    const { model, manifest } = await loadCheckpoint(this.path(version), { expectedSha256 });
    this.model?.dispose();
    this.model = model;
    this.base = manifest.baseModel ?? null;
    return { policy: new BuiltinTrainable(model), steps: version === 0 ? 0 : (manifest.metrics?.steps ?? null) };
  }

  async save(version: number, parentVersion: number, metrics: Record<string, number>): Promise<SavedVersion> {
    if (!this.model) throw new TurnstreamError(ErrorCodes.INTERNAL, 'no policy loaded');
    const saved = await saveCheckpoint(this.model, {
      weightsDir: this.weightsDir,
      modelId: this.modelId,
      version,
      parentVersion,
      baseModel: this.baseModel,
      metrics,
    });
    return { uri: saved.uri, sha256: saved.sha256 };
  }

  dispose(): void {
    this.model?.dispose();
    this.model = null;
  }
}

export interface LoraLineageOptions {
  weightsDir: string;
  modelId: string;
  /** The frozen base: display name, GGUF path and its sha256. */
  base: { name: string; path: string; sha256: string };
  /** Rank, alpha, targets, layers of a new lineage (a saved version keeps its own). @default DEFAULT_LORA */
  lora?: Partial<LoraConfig>;
  /** Tokens of one training pass; longer samples lose their prompt's head. @default 1024 */
  maxTrainTokens?: number;
  /** Seed of a fresh adapter's A matrices. @default 0 */
  seed?: number;
  /** The base already loaded into tfjs (shared by several lineages, not disposed by this one). @default loaded on first use */
  baseTf?: { model: TfLlamaModel; config: LlamaConfig; architecture: string };
  logger?: Pick<Logger, 'info' | 'warn'>;
}

export class LoraLineage implements PolicyLineage {
  readonly format = ADAPTER_FORMAT;
  private readonly store: AdapterStore;
  private model: TfLlamaModel | null = null;
  private config: LlamaConfig | null = null;
  private architecture = '';
  private lora: LoraAdapter | null = null;
  private vocab: NodeLlamaModel | null = null;

  constructor(private readonly o: LoraLineageOptions) {
    this.store = new AdapterStore(o.weightsDir);
    if (o.baseTf) {
      this.model = o.baseTf.model;
      this.config = o.baseTf.config;
      this.architecture = o.baseTf.architecture;
    }
  }

  get modelId(): string {
    return this.o.modelId;
  }

  get baseModel(): string {
    return baseModelRef(this.o.base);
  }

  /** The frozen base in tfjs (loaded on first use). */
  async baseModelTf(): Promise<{ model: TfLlamaModel; config: LlamaConfig }> {
    if (!this.model || !this.config) {
      const t0 = Date.now();
      const { model, config, architecture } = await loadTfLlama(this.o.base.path);
      this.model = model;
      this.config = config;
      this.architecture = architecture;
      this.o.logger?.info(
        {
          base: this.o.base.name,
          layers: config.layers,
          hidden: config.hiddenSize,
          frozenMB: Math.round(model.frozenBytes / 2 ** 20),
          ms: Date.now() - t0,
        },
        'base model loaded into tfjs',
      );
    }
    return { model: this.model, config: this.config };
  }

  /** The prompt's last 400 characters and the response, decoded by the model's own tokenizer. */
  readonly sampleText: SampleText = (sample) => {
    if (!this.vocab) throw new TurnstreamError(ErrorCodes.INTERNAL, 'init() loads the tokenizer first');
    const text = (ids: number[]) => this.vocab!.detokenize(ids as Token[], false);
    return {
      prompt: text(sample.tokens.slice(0, sample.promptLength)).slice(-400),
      response: text(sample.tokens.slice(sample.promptLength)),
    };
  };

  async init(): Promise<{ sha256: string }> {
    this.vocab ??= await (
      await llamaRuntime({ logger: this.o.logger as Logger | undefined })
    ).loadModel({ modelPath: this.o.base.path, vocabOnly: true });
    const ref = await this.store.ensureBase(this.o.modelId, { name: this.o.base.name, sha256: this.o.base.sha256 });
    return { sha256: ref.manifest.sha256 };
  }

  versions(): Promise<number[]> {
    return this.store.list(this.o.modelId);
  }

  path(version: number): string {
    return this.store.path(this.o.modelId, version);
  }

  async load(version: number, expectedSha256?: string): Promise<LoadedVersion> {
    const { model, config } = await this.baseModelTf();
    const ref = await this.store.ref(this.o.modelId, version);
    if (ref.manifest.base.sha256 !== this.o.base.sha256) {
      throw new TurnstreamError(
        ErrorCodes.CORRUPT_WEIGHTS,
        `${this.o.modelId} v${version} was trained on ${baseModelRef(ref.manifest.base)}, not ${this.baseModel}`,
      );
    }
    await this.store.verify(ref, expectedSha256);
    let lora: LoraAdapter;
    if (ref.adapterPath && ref.manifest.lora) {
      const file = await openGguf(ref.adapterPath);
      try {
        lora = LoraAdapter.fromPairs(config, ref.manifest.lora, (await readLoraAdapter(file)).pairs);
      } finally {
        await file.close();
      }
    } else {
      lora = LoraAdapter.init(config, { ...DEFAULT_LORA, ...this.o.lora }, this.o.seed ?? 0);
    }
    this.lora?.dispose();
    this.lora = lora;
    const steps = version === 0 ? 0 : (ref.manifest.metrics?.steps ?? null);
    return { policy: new LoraTrainable(model, lora, this.o.maxTrainTokens ?? 1024), steps };
  }

  async save(version: number, parentVersion: number, metrics: Record<string, number>): Promise<SavedVersion> {
    const lora = this.lora;
    if (!lora) throw new TurnstreamError(ErrorCodes.INTERNAL, 'no policy loaded');
    const pairs = await lora.toPairs();
    const ref = await this.store.write(
      {
        modelId: this.o.modelId,
        version,
        parentVersion,
        base: { name: this.o.base.name, sha256: this.o.base.sha256 },
        lora: lora.config,
        metrics,
      },
      async (path) => {
        await writeLoraAdapter(path, {
          architecture: this.architecture,
          alpha: lora.config.alpha,
          pairs,
          name: `${this.o.modelId} v${version}`,
        });
      },
    );
    return { uri: ref.uri, sha256: ref.manifest.sha256 };
  }

  dispose(): void {
    void this.vocab?.dispose();
    this.vocab = null;
    this.lora?.dispose();
    this.lora = null;
    if (!this.o.baseTf) this.model?.dispose();
    this.model = null;
  }
}
