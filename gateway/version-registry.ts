/**
 * The weight versions an engine serves, hot-swapped with no pause (docs/design/algorithms.md §6):
 * the protocol both engines share (the built-in policies, policy-registry.ts; llama.cpp's
 * adapters, llama-versions.ts).
 *
 * A request leases the current version and releases it when done. A new WeightVersion is loaded
 * and verified (sha256) in the background while the current one keeps serving, versions one at a
 * time in arrival order, then swapped in with one assignment, between requests. The old version
 * is retired and disposed when its last lease ends. Versions older than or equal to the current
 * one, and other models' versions, are ignored; a failed load is logged and counted, and the
 * current version keeps serving. A load that failed for a passing reason (its pieces not yet
 * readable on Kafka, Kafka away) is tried again with backoff while no newer version is offered.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WeightVersion } from '../schemas/index.ts';
import { isRetriable, type Logger } from '../core/index.ts';

/** What a registry serves: one loaded version, freed by `dispose()` once no request holds it. */
export interface ServedVersion {
  readonly version: number;
  dispose(): void;
}

/** A version held until `release()` (idempotent): it is not disposed meanwhile, even once retired. */
export interface VersionLease<T extends ServedVersion> {
  readonly value: T;
  release(): void;
}

/** A loaded version and its leases: disposed once, when retired and its last lease released. */
export class HeldVersion<T extends ServedVersion> {
  private leases = 0;
  private retired = false;
  private disposed = false;
  /** When it was loaded or last leased (the least recently used pinned version goes first). */
  lastUsed = Date.now();

  constructor(readonly value: T) {}

  get version(): number {
    return this.value.version;
  }

  /** Leases held now. */
  get inUse(): number {
    return this.leases;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  lease(): VersionLease<T> {
    this.leases++;
    this.lastUsed = Date.now();
    let released = false;
    return {
      value: this.value,
      release: () => {
        if (released) return;
        released = true;
        this.leases--;
        this.maybeDispose();
      },
    };
  }

  /** No new lease will be taken: disposed now if none is held, else when the last one is released. */
  retire(): void {
    this.retired = true;
    this.maybeDispose();
  }

  private maybeDispose(): void {
    if (this.retired && this.leases === 0 && !this.disposed) {
      this.disposed = true;
      this.value.dispose();
    }
  }
}

export interface VersionRegistryOptions<T extends ServedVersion> {
  /** The model served: WeightVersions of other models are ignored. */
  modelId: string;
  /** Loads and verifies (sha256) an offered version; a rejection is logged and counted. */
  load: (wv: WeightVersion) => Promise<T>;
  /** What a version is called in the log ('policy', 'adapter'). */
  what: string;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Called after every swap (metrics). */
  onSwap?: (value: T) => void;
  /** Waits before each new try of a load that failed for a passing reason, in ms. @default [1000, 2000, 4000, 8000, 16000] */
  retryDelaysMs?: readonly number[];
}

const RETRY_DELAYS_MS = [1000, 2000, 4000, 8000, 16000];

export class VersionRegistry<T extends ServedVersion> {
  private served: HeldVersion<T> | null = null;
  private loading: Promise<void> = Promise.resolve();
  /** The newest version offered, loaded or not yet. */
  private wanted = -1;
  /** Failed loads since start. */
  loadFailures = 0;
  /** Cuts a wait before a new try short: set by `close`. */
  private readonly closing = new AbortController();

  constructor(private readonly reg: VersionRegistryOptions<T>) {}

  get modelId(): string {
    return this.reg.modelId;
  }

  /** The version being served, or null before the first load. */
  get version(): number | null {
    return this.served?.version ?? null;
  }

  /** What is being served, or null before the first load. */
  get current(): T | null {
    return this.served?.value ?? null;
  }

  /** Holds the current version until `release()`; a swap meanwhile does not dispose it. Null before the first load. */
  lease(): VersionLease<T> | null {
    return this.served?.lease() ?? null;
  }

  /** Serves `value` from now on; the version it replaces is retired. */
  protected install(value: T): void {
    const old = this.served;
    this.served = new HeldVersion(value);
    this.reg.onSwap?.(value);
    old?.retire();
  }

  /**
   * Handles a WeightVersion from the weights topic: loads it in the background (one at a time, in
   * arrival order) and swaps it in when verified. Resolves when handled.
   */
  offer(wv: WeightVersion): Promise<void> {
    if (wv.modelId !== this.reg.modelId) return Promise.resolve();
    if (wv.version <= Math.max(this.version ?? -1, this.wanted)) return Promise.resolve();
    this.wanted = wv.version;
    this.loading = this.loading.then(() => this.loadVersion(wv));
    return this.loading;
  }

  private async loadVersion(wv: WeightVersion): Promise<void> {
    const delays = this.reg.retryDelaysMs ?? RETRY_DELAYS_MS;
    const what = this.reg.what;
    for (let attempt = 0; ; attempt++) {
      if (wv.version <= (this.version ?? -1)) return;
      const started = Date.now();
      try {
        this.install(await this.reg.load(wv));
        this.reg.logger?.info({ modelId: wv.modelId, version: wv.version, loadMs: Date.now() - started }, `${what} swapped in`);
        return;
      } catch (err) {
        this.loadFailures++;
        // A newer version offered meanwhile is loaded next instead; a lasting failure (a bad
        // sha256) is not tried again.
        const again = isRetriable(err) && attempt < delays.length && this.wanted === wv.version && !this.closing.signal.aborted;
        this.reg.logger?.error(
          { err, modelId: wv.modelId, version: wv.version, ...(again ? { retryInMs: delays[attempt] } : {}) },
          `could not load a new ${what} version; still serving the current one`,
        );
        if (!again) return;
        await sleep(delays[attempt]!, undefined, { signal: this.closing.signal }).catch(() => undefined);
        if (this.wanted !== wv.version || this.closing.signal.aborted) return;
      }
    }
  }

  /** Waits for loads in progress (a wait before a new try is cut short), then retires the current version. */
  async close(): Promise<void> {
    this.closing.abort();
    await this.loading;
    const held = this.served;
    this.served = null;
    held?.retire();
  }
}
