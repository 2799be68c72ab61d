/**
 * The LoRA adapters node-llama-cpp holds for the served versions, freed with the last context
 * that applies them.
 *
 * node-llama-cpp 3.21.1 loads an adapter once per file and keeps it on the model
 * (`LlamaModel._loraAdapters`, by resolved path) until the model itself is disposed: disposing a
 * context does not release it. Every weight version is a new file, so a long-running gateway
 * grew with each version it ever served: about 28 MiB a version on SmolLM2-135M (adapter files of
 * 3.7 MB; 30 swaps of 8 contexts each: RSS 1,304 → 2,091 MiB; released, flat at about 1,270 MiB).
 * This counts the slots that use each file and frees the adapter when the count falls to 0.
 */
import { resolve } from 'node:path';
import type { LlamaModel } from 'node-llama-cpp';
import type { Logger } from '../core/index.ts';

/** What of node-llama-cpp's model this reaches into (pinned at 3.21.1; absent: nothing is freed). */
interface AdapterCache {
  _loraAdapters?: Map<string, { dispose(): Promise<void> }>;
}

export class LoadedAdapters {
  private readonly users = new Map<string, number>();
  private warned = false;

  constructor(
    private readonly model: LlamaModel,
    private readonly logger?: Pick<Logger, 'warn'>,
  ) {}

  /** A slot is about to apply `filePath` (null: the base, nothing to hold). */
  hold(filePath: string | null): void {
    if (!filePath) return;
    const key = resolve(filePath);
    this.users.set(key, (this.users.get(key) ?? 0) + 1);
  }

  /** A slot that held `filePath` has disposed its contexts: the adapter goes with its last one. */
  async release(filePath: string | null): Promise<void> {
    if (!filePath) return;
    const key = resolve(filePath);
    const left = (this.users.get(key) ?? 1) - 1;
    if (left > 0) {
      this.users.set(key, left);
      return;
    }
    this.users.delete(key);
    const cache = this.cache();
    const adapter = cache?.get(key);
    if (!cache || !adapter) return;
    cache.delete(key);
    try {
      await adapter.dispose();
    } catch (err) {
      this.logger?.warn(`could not free the LoRA adapter ${filePath}: ${(err as Error).message}`);
    }
  }

  /** Adapters node-llama-cpp holds now (null where its cache cannot be seen). */
  get loaded(): number | null {
    return this.cache()?.size ?? null;
  }

  private cache(): Map<string, { dispose(): Promise<void> }> | null {
    const cache = (this.model as unknown as AdapterCache)._loraAdapters;
    if (cache instanceof Map) return cache;
    if (!this.warned) {
      this.warned = true;
      this.logger?.warn('node-llama-cpp keeps its LoRA adapters out of reach: a retired version’s adapter stays loaded');
    }
    return null;
  }
}
