/**
 * The weight versions a llama.cpp engine serves: the version registry (version-registry.ts), hot-swapped
 * with no pause, plus what is llama.cpp's own: contexts, their sequences, pinned versions, the
 * prefix cache.
 *
 * A version is the frozen base plus one LoRA adapter file. llama.cpp applies an adapter to a
 * whole context (every sequence of a batch), so each served version has contexts of its own:
 * `parallel` contexts of one sequence (`separate`, the default), or one context of `parallel`
 * sequences decoded as one batch (`shared`; defaults.ts says why it is not the default). A new
 * version is verified (sha256) and its contexts created in the background while the current one
 * keeps answering; the swap is one assignment between requests. Requests in flight finish on the
 * contexts they leased; a retired version's contexts are freed when its last lease ends. Versions pinned by name (`model@N`) get contexts too, the least recently
 * used dropped beyond `maxPinned`.
 *
 * Prompts are evaluated once (the prefix cache): each sequence keeps what it evaluated last, a
 * request goes to the free sequence that shares the longest run of tokens with its prompt (the
 * least recently used among equals), and only the rest is evaluated. What a sequence is about to
 * discard is kept on disk first (`KvStates`), and a kept state that shares more with a prompt
 * than any sequence does is loaded instead of evaluating again: an agent's next turn, and a
 * system prompt seen before in another session, cost only their new tokens. Reuse is by exact
 * token prefix and within one KV key (kv-key.ts): a new adapter changes the cache at every
 * position, so after a swap a prompt is evaluated anew under the new weights, never served from
 * the old ones' cache.
 */
import type { LlamaContext, LlamaContextSequence, LlamaModel as NodeLlamaModel } from 'node-llama-cpp';
import { AdapterStore, baseModelRef, type AdapterVersionRef } from '../policy/index.ts';
import { ErrorCodes, TurnstreamError, type Logger } from '../core/index.ts';
import type { LlamaBatching } from './defaults.ts';
import { kvKeyOf } from './kv-key.ts';
import { commonPrefix, type KvStates } from './kv-states.ts';
import { LoadedAdapters } from './lora-adapters.ts';
import { HeldVersion, VersionRegistry, type ServedVersion, type VersionLease } from './version-registry.ts';

export interface LlamaVersionsOptions {
  model: NodeLlamaModel;
  modelId: string;
  /** The base's name and sha256: a version trained on another base is refused. */
  base: { name: string; sha256: string };
  store: AdapterStore;
  contextSize: number;
  parallel: number;
  /** Where the `parallel` sequences live (LlamaBatching). @default 'separate' */
  batching?: LlamaBatching;
  /** CPU threads, all the version's contexts together (each of `separate`'s gets its share, at least 1). */
  threads?: number;
  /** Tokens llama.cpp evaluates in one batch. @default node-llama-cpp's (512) */
  batchSize?: number;
  /** @default node-llama-cpp's ('auto') */
  flashAttention?: boolean | 'auto';
  /** Prompt states kept on disk; null keeps only what the sequences hold. @default null */
  states?: KvStates | null;
  /**
   * A sequence's evaluated tokens are written to `states` before they are discarded, and a kept
   * state is loaded instead of evaluating, when that saves at least this many tokens. @default 256
   */
  minStateTokens?: number;
  /** Contexts kept for versions pinned by name, besides the current one. @default 2 */
  maxPinned?: number;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  onSwap?: (version: number) => void;
}

/** A leased sequence, ready for a prompt: `reused` tokens of it are already evaluated. */
export interface SequenceLease {
  slot: VersionSlot;
  seq: LlamaContextSequence;
  /** Leading prompt tokens whose evaluation is reused (never the last one: its logits are needed). */
  reused: number;
  release: () => void;
}

/** A version's contexts and their sequences (leased and retired by the registry: `HeldVersion`). */
export class VersionSlot implements ServedVersion {
  /** Free sequences, the least recently released first. */
  private readonly free: LlamaContextSequence[] = [];
  private readonly waiting: Array<(s: LlamaContextSequence) => void> = [];

  constructor(
    readonly version: number,
    /** One context of `parallel` sequences, or `parallel` contexts of one (LlamaBatching). */
    readonly contexts: readonly LlamaContext[],
    readonly adapterPath: string | null,
    /** Versions of one key may share evaluated prompts (kv-key.ts). */
    readonly kvKey: string = 'base',
    private readonly states: KvStates | null = null,
    private readonly minStateTokens = 256,
    /** Called once its contexts are disposed (the adapter may go with them: lora-adapters.ts). */
    private readonly onDisposed?: () => Promise<void>,
  ) {
    for (const context of contexts) while (context.sequencesLeft > 0) this.free.push(context.getSequence());
  }

  /** The first context (all have the same settings). */
  get context(): LlamaContext {
    return this.contexts[0]!;
  }

  /**
   * A free sequence (the caller holds a lease): the one that shares the longest prefix with
   * `prompt`, the least recently used among equals; an empty one (else the least recently used)
   * when a kept state shares more than any of them.
   */
  async acquireSequence(prompt: readonly number[], signal: AbortSignal): Promise<LlamaContextSequence> {
    if (this.free.length > 0) {
      let best = 0;
      let bestLen = -1;
      this.free.forEach((s, i) => {
        const n = commonPrefix(s.contextTokens, prompt);
        if (n > bestLen) [best, bestLen] = [i, n];
      });
      const kept = this.states?.best(this.kvKey, prompt);
      if (kept && kept.tokens >= bestLen + this.minStateTokens) {
        const empty = this.free.findIndex((s) => s.nextTokenIndex === 0);
        best = empty >= 0 ? empty : 0;
      }
      return this.free.splice(best, 1)[0];
    }
    signal.throwIfAborted();
    return new Promise<LlamaContextSequence>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiting.indexOf(give);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason instanceof Error ? signal.reason : new TurnstreamError(ErrorCodes.ABORTED, 'aborted while waiting'));
      };
      const give = (s: LlamaContextSequence): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(s);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(give);
    });
  }

  /**
   * Readies `seq` for `prompt` and returns how many of its leading tokens are already evaluated:
   * keeps what the sequence holds beyond the shared prefix on disk when that is worth it, loads
   * a kept state that shares more, and erases everything after the shared prefix. The prompt's
   * last token is always evaluated again (the first answer token needs its logits). `fresh`
   * reuses nothing: every prompt token is evaluated (their log-probs are wanted).
   */
  async prepare(seq: LlamaContextSequence, prompt: readonly number[], fresh = false): Promise<number> {
    const limit = fresh ? 0 : prompt.length - 1;
    let keep = Math.min(commonPrefix(seq.contextTokens, prompt), limit);
    if (this.states) {
      const held = seq.contextTokens;
      if (held.length - keep >= this.minStateTokens && !this.states.covers(this.kvKey, held)) await this.states.save(this.kvKey, seq);
      const kept = this.states.best(this.kvKey, prompt);
      if (!fresh && kept && Math.min(kept.tokens, limit) >= keep + this.minStateTokens) {
        await this.states.load(kept, seq); // on failure the sequence is left empty
        keep = Math.min(commonPrefix(seq.contextTokens, prompt), limit);
      }
    }
    if (seq.nextTokenIndex > keep) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
    return keep;
  }

  releaseSequence(seq: LlamaContextSequence): void {
    const next = this.waiting.shift();
    if (next) next(seq);
    else this.free.push(seq);
  }

  dispose(): void {
    void Promise.all(this.contexts.map((c) => c.dispose()))
      .then(() => this.onDisposed?.())
      .catch(() => undefined); // a context that fails to free leaves memory behind, not a failed request
  }
}

export class LlamaVersions extends VersionRegistry<VersionSlot> {
  private readonly pinned = new Map<number, Promise<HeldVersion<VersionSlot>>>();
  /** The adapters of the versions with contexts (a retired version's is freed with them). */
  readonly adapters: LoadedAdapters;

  constructor(private readonly o: LlamaVersionsOptions) {
    super({
      modelId: o.modelId,
      what: 'adapter',
      logger: o.logger,
      onSwap: (slot) => o.onSwap?.(slot.version),
      load: async (wv) => this.createSlot(await this.verified(wv.version, wv.sha256)),
    });
    this.adapters = new LoadedAdapters(o.model, o.logger);
  }

  /** The current version's (first) llama.cpp context (its settings: contextSize, batchSize, threads…). */
  get context(): LlamaContext | null {
    return this.current?.context ?? null;
  }

  private async createSlot(ref: AdapterVersionRef): Promise<VersionSlot> {
    const kvKey = await kvKeyOf(ref, this.o.model.fileInfo.architectureMetadata.block_count ?? 0);
    const separate = (this.o.batching ?? 'separate') === 'separate';
    const threads = this.o.threads && separate ? Math.max(1, Math.floor(this.o.threads / this.o.parallel)) : this.o.threads;
    const create = (sequences: number) =>
      this.o.model.createContext({
        contextSize: this.o.contextSize,
        sequences,
        ...(threads ? { threads } : {}),
        ...(this.o.batchSize ? { batchSize: this.o.batchSize } : {}),
        ...(this.o.flashAttention !== undefined ? { flashAttention: this.o.flashAttention } : {}),
        ...(ref.adapterPath ? { lora: { adapters: [{ filePath: ref.adapterPath, scale: 1 }] } } : {}),
      });
    const contexts: LlamaContext[] = [];
    const release = () => this.adapters.release(ref.adapterPath);
    this.adapters.hold(ref.adapterPath);
    try {
      // one after the other, each taking its memory before the next asks: 8 contexts of one
      // took as long as one of 8 on SmolLM2 (0.35–0.42 s), so a swap costs what it did
      if (separate) for (let i = 0; i < this.o.parallel; i++) contexts.push(await create(1));
      else contexts.push(await create(this.o.parallel));
    } catch (err) {
      await Promise.all(contexts.map((c) => c.dispose()));
      await release();
      throw err;
    }
    return new VersionSlot(ref.version, contexts, ref.adapterPath, kvKey, this.o.states ?? null, this.o.minStateTokens, release);
  }

  private async verified(version: number, expectedSha256?: string): Promise<AdapterVersionRef> {
    const ref = await this.o.store.ref(this.o.modelId, version);
    if (ref.manifest.base.sha256 !== this.o.base.sha256) {
      throw new TurnstreamError(
        ErrorCodes.CORRUPT_WEIGHTS,
        `${this.o.modelId} v${version} was trained on ${baseModelRef(ref.manifest.base)}, not on the served ${baseModelRef(this.o.base)}`,
      );
    }
    await this.o.store.verify(ref, expectedSha256);
    return ref;
  }

  /** Serves the store's latest version (version 0, the base, when there is no other). */
  async loadInitial(): Promise<number> {
    await this.o.store.ensureBase(this.o.modelId, this.o.base);
    const latest = await this.o.store.latest(this.o.modelId);
    const slot = await this.createSlot(await this.verified(latest!.version));
    this.install(slot);
    return slot.version;
  }

  /**
   * A sequence of `version`'s context (null: the current version), leased until `release()`.
   * The current slot is leased in the same tick it is read, so a swap cannot free it meanwhile.
   * `fresh`: nothing of the prompt is reused (see `VersionSlot.prepare`).
   */
  async acquire(version: number | null, prompt: readonly number[], signal: AbortSignal, fresh = false): Promise<SequenceLease> {
    let held: VersionLease<VersionSlot>;
    for (;;) {
      const cur = this.version;
      if (cur === null) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'the model is not loaded yet');
      if (version === null || version === cur) {
        held = this.lease()!;
        break;
      }
      const pinned = await this.pinnedSlot(version);
      if (pinned.isDisposed) continue; // evicted meanwhile: load it again
      held = pinned.lease();
      break;
    }
    const slot = held.value;
    let seq: LlamaContextSequence | null = null;
    try {
      seq = await slot.acquireSequence(prompt, signal);
      const reused = await slot.prepare(seq, prompt, fresh);
      const s = seq;
      let released = false;
      return {
        slot,
        seq,
        reused,
        release: () => {
          if (released) return;
          released = true;
          slot.releaseSequence(s);
          held.release();
        },
      };
    } catch (err) {
      if (seq) slot.releaseSequence(seq);
      held.release();
      throw err;
    }
  }

  private async pinnedSlot(version: number): Promise<HeldVersion<VersionSlot>> {
    let p = this.pinned.get(version);
    if (!p) {
      p = this.verified(version).then(async (ref) => new HeldVersion(await this.createSlot(ref)));
      this.pinned.set(version, p);
      p.catch(() => this.pinned.delete(version));
      void this.evictPinned();
    }
    const held = await p;
    held.lastUsed = Date.now();
    return held;
  }

  private async evictPinned(): Promise<void> {
    const max = this.o.maxPinned ?? 2;
    if (this.pinned.size <= max) return;
    const slots = await Promise.all([...this.pinned].map(async ([v, p]) => [v, await p.catch(() => null)] as const));
    const idle = slots.filter(([, s]) => s && s.inUse === 0).sort((a, b) => a[1]!.lastUsed - b[1]!.lastUsed);
    for (const [v, s] of idle.slice(0, this.pinned.size - max)) {
      if (s!.inUse > 0) continue;
      this.pinned.delete(v);
      s!.retire();
    }
  }

  /** Versions the store holds (for `/v1/models`). */
  async available(): Promise<number[]> {
    return this.o.store.list(this.o.modelId);
  }

  override async close(): Promise<void> {
    await super.close();
    for (const p of this.pinned.values()) (await p.catch(() => null))?.retire();
    this.pinned.clear();
  }
}
