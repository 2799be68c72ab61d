/**
 * The policy the built-in engine serves, hot-swappable with no pause (docs/design/algorithms.md §6).
 *
 * A request leases the current policy and releases it when done; a new WeightVersion is
 * loaded and verified (sha256) in the background while requests keep being served by the old
 * one, then the reference is swapped in one assignment, between requests. The old version
 * stays alive until its last lease is released, then it is disposed. Versions older than or
 * equal to the current one, and other models' versions, are ignored; a failed load is logged
 * and counted, and the current version keeps serving.
 */
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WeightVersion } from '../schemas/index.ts';
import type { Logger } from '../core/index.ts';
import type { LoadPolicyOptions, PolicyHandle } from '../policy/index.ts';

export type PolicyLoader = (opts: LoadPolicyOptions) => Promise<PolicyHandle>;

export interface PolicyRegistryOptions {
  weightsDir: string;
  modelId: string;
  load: PolicyLoader;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Called after every swap (metrics). */
  onSwap?: (policy: PolicyHandle) => void;
}

interface Slot {
  policy: PolicyHandle;
  leases: number;
  retired: boolean;
}

export interface PolicyLease {
  readonly policy: PolicyHandle;
  release(): void;
}

export class PolicyRegistry {
  private current: Slot | null = null;
  private loading: Promise<void> = Promise.resolve();
  private wanted = -1;
  /** Failed loads since start. */
  loadFailures = 0;

  constructor(private readonly opts: PolicyRegistryOptions) {}

  get modelId(): string {
    return this.opts.modelId;
  }

  /** The version being served, or null before the first load. */
  get version(): number | null {
    return this.current?.policy.version ?? null;
  }

  get policy(): PolicyHandle | null {
    return this.current?.policy ?? null;
  }

  /** Loads the latest version of the store (or `version`) and serves it. */
  async loadInitial(version?: number): Promise<PolicyHandle> {
    const policy = await this.opts.load({ weightsDir: this.opts.weightsDir, modelId: this.opts.modelId, version });
    this.install(policy);
    return policy;
  }

  /** Holds the current policy until `release()`; a swap meanwhile does not dispose it. */
  lease(): PolicyLease | null {
    const slot = this.current;
    if (!slot) return null;
    slot.leases++;
    let released = false;
    return {
      policy: slot.policy,
      release: () => {
        if (released) return;
        released = true;
        slot.leases--;
        this.maybeDispose(slot);
      },
    };
  }

  /**
   * Handles a WeightVersion from the weights topic: loads it in the background (versions are
   * loaded one at a time, in arrival order) and swaps when verified. Resolves when handled.
   */
  offer(wv: WeightVersion): Promise<void> {
    if (wv.modelId !== this.opts.modelId) return Promise.resolve();
    if (wv.version <= Math.max(this.version ?? -1, this.wanted)) return Promise.resolve();
    this.wanted = wv.version;
    this.loading = this.loading.then(() => this.loadVersion(wv));
    return this.loading;
  }

  private async loadVersion(wv: WeightVersion): Promise<void> {
    if (wv.version <= (this.version ?? -1)) return;
    const started = Date.now();
    try {
      const policy = await this.opts.load({
        weightsDir: weightsDirOf(wv.uri, wv.modelId) ?? this.opts.weightsDir,
        modelId: wv.modelId,
        version: wv.version,
        expectedSha256: wv.sha256,
      });
      this.install(policy);
      this.opts.logger?.info({ modelId: wv.modelId, version: wv.version, loadMs: Date.now() - started }, 'policy swapped');
    } catch (err) {
      this.loadFailures++;
      this.opts.logger?.error(
        { err, modelId: wv.modelId, version: wv.version },
        'could not load a new policy version; still serving the current one',
      );
    }
  }

  private install(policy: PolicyHandle): void {
    const old = this.current;
    this.current = { policy, leases: 0, retired: false };
    this.opts.onSwap?.(policy);
    if (old) {
      old.retired = true;
      this.maybeDispose(old);
    }
  }

  private maybeDispose(slot: Slot): void {
    if (slot.retired && slot.leases === 0) {
      slot.retired = false; // dispose once
      slot.policy.dispose();
    }
  }

  /** Waits for loads in progress, then disposes the current policy. */
  async close(): Promise<void> {
    await this.loading;
    const slot = this.current;
    this.current = null;
    if (slot) {
      slot.retired = true;
      this.maybeDispose(slot);
    }
  }
}

/** `<weightsDir>/<modelId>/v<n>` (a path or file:// URI) → `<weightsDir>`; null when not local. */
export function weightsDirOf(uri: string, modelId: string): string | null {
  let path: string;
  if (uri.startsWith('file://')) path = fileURLToPath(uri);
  else if (uri.startsWith('/')) path = uri;
  else return null;
  path = path.replace(/\/+$/, '');
  const modelDir = dirname(path);
  if (!modelDir.endsWith(`/${modelId}`)) return null;
  return dirname(modelDir);
}
