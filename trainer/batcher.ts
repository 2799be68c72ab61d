/**
 * Forms training batches from buffered samples (docs/design/algorithms.md §6–7), pure logic:
 *
 * - staleness: a sample whose `policyVersion` is more than `maxStaleness` versions behind the
 *   learner's current version is dropped and counted (`'drop'`, the default), or kept and marked
 *   for a truncated importance weight (`'tis'`, see learner-step.ts);
 * - fairness: one user contributes at most `ceil(maxUserShare · batchSize)` samples to a batch;
 *   the rest wait, in arrival order, for the next batch. Samples without a user id are not capped
 *   (nothing says they share a user);
 * - a batch is full at `batchSize`; a smaller one is released once the oldest buffered sample
 *   has waited `maxWaitMs` (so one talkative user alone still trains, at the capped size), but
 *   never with fewer than `minSamples` trainable samples (a few stray calls never make a
 *   version). A batch with no trainable sample at all (masked, dropped) is released to commit;
 * - a GRPO rollout batch (samples with a `group`, processors/group-builder) is one step: its
 *   samples are taken together, all of them and nothing else, once `batchSamples` are buffered
 *   (they are produced in one transaction) or its oldest has waited `maxWaitMs`; no user cap.
 */
import { BATCHER_DEFAULTS } from './defaults.ts';
import type { Sample } from '../schemas/index.ts';

export type StalenessMode = 'drop' | 'tis';
export { BATCHER_DEFAULTS };

export interface BatcherOptions {
  /** `TRAIN_BATCH_SIZE` @default BATCHER_DEFAULTS.batchSize (16) */
  batchSize?: number;
  /** `TRAIN_MAX_STALENESS` @default BATCHER_DEFAULTS.maxStaleness (2) */
  maxStaleness?: number;
  /** `TRAIN_STALENESS` @default BATCHER_DEFAULTS.staleness ('drop') */
  staleness?: StalenessMode;
  /** Largest share of a batch one user may fill, in (0, 1]. `TRAIN_MAX_USER_SHARE` @default BATCHER_DEFAULTS.maxUserShare (0.5) */
  maxUserShare?: number;
  /** A partial batch is released when its oldest sample has waited this long. `TRAIN_MAX_WAIT_MS` @default BATCHER_DEFAULTS.maxWaitMs (30000) */
  maxWaitMs?: number;
  /** Fewest trainable samples (some loss-mask token) a batch may train on, ≤ batchSize. @default BATCHER_DEFAULTS.minSamples (1) */
  minSamples?: number;
}

/** A buffered sample and where it came from. */
export interface Pending<M = unknown> {
  sample: Sample;
  /** Opaque origin (partition and offset, for the learner's offset commits). */
  meta: M;
  receivedAt: number;
}

export interface TakenBatch<M = unknown> {
  /** Samples to train on, in arrival order. */
  batch: Array<Pending<M> & { stale: boolean }>;
  /** Samples dropped as too stale (they are consumed: their offsets commit with the batch). */
  dropped: Array<Pending<M>>;
}

export class SampleBatcher<M = unknown> {
  readonly batchSize: number;
  readonly maxStaleness: number;
  readonly staleness: StalenessMode;
  readonly maxPerUser: number;
  readonly maxWaitMs: number;
  readonly minSamples: number;
  private buffer: Array<Pending<M>> = [];

  constructor(options: BatcherOptions = {}) {
    this.batchSize = options.batchSize ?? BATCHER_DEFAULTS.batchSize;
    this.maxStaleness = options.maxStaleness ?? BATCHER_DEFAULTS.maxStaleness;
    this.staleness = options.staleness ?? BATCHER_DEFAULTS.staleness;
    const share = options.maxUserShare ?? BATCHER_DEFAULTS.maxUserShare;
    if (!(share > 0 && share <= 1)) throw new RangeError('maxUserShare must be in (0, 1]');
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new RangeError('batchSize must be a positive integer');
    this.maxPerUser = Math.max(1, Math.ceil(share * this.batchSize));
    this.maxWaitMs = options.maxWaitMs ?? BATCHER_DEFAULTS.maxWaitMs;
    this.minSamples = options.minSamples ?? BATCHER_DEFAULTS.minSamples;
    if (!Number.isInteger(this.minSamples) || this.minSamples < 1 || this.minSamples > this.batchSize) {
      throw new RangeError('minSamples must be an integer in [1, batchSize]');
    }
  }

  get size(): number {
    return this.buffer.length;
  }

  /** Buffered samples (oldest first). */
  pending(): ReadonlyArray<Pending<M>> {
    return this.buffer;
  }

  add(sample: Sample, meta: M, now = Date.now()): void {
    this.buffer.push({ sample, meta, receivedAt: now });
  }

  /** Removes buffered samples matching `pred` (a lost partition's). */
  remove(pred: (p: Pending<M>) => boolean): void {
    this.buffer = this.buffer.filter((p) => !pred(p));
  }

  isStale(sample: Sample, currentVersion: number): boolean {
    return currentVersion - sample.policyVersion > this.maxStaleness;
  }

  /** The samples of the GRPO batch at the head of the buffer, if the oldest sample is one. */
  private groupPlan(currentVersion: number): { take: Set<number>; drop: Set<number>; trainable: number; complete: boolean } | null {
    const head = this.buffer[0]?.sample.group;
    if (!head) return null;
    const take = new Set<number>();
    const drop = new Set<number>();
    let members = 0;
    this.buffer.forEach((p, i) => {
      if (p.sample.group?.batchId !== head.batchId) return;
      members++;
      if (this.staleness === 'drop' && this.isStale(p.sample, currentVersion)) drop.add(i);
      else take.add(i);
    });
    return { take, drop, trainable: take.size, complete: members >= head.batchSamples };
  }

  /** What a batch taken now would hold, without taking it. */
  private plan(currentVersion: number): { take: Set<number>; drop: Set<number>; trainable: number } {
    const grouped = this.groupPlan(currentVersion);
    if (grouped) return grouped;
    const take = new Set<number>();
    const drop = new Set<number>();
    const perUser = new Map<string, number>();
    let trainable = 0;
    this.buffer.forEach((p, i) => {
      if (p.sample.group) return; // waits for its own batch
      // A sample with no trained token (masked) takes no slot: it only needs its offset committed.
      if (!p.sample.lossMask.some((m) => m > 0) && !(this.staleness === 'drop' && this.isStale(p.sample, currentVersion))) {
        take.add(i);
        return;
      }
      if (trainable >= this.batchSize) return;
      if (this.staleness === 'drop' && this.isStale(p.sample, currentVersion)) {
        drop.add(i);
        return;
      }
      const user = p.sample.userId;
      if (user !== null) {
        const n = perUser.get(user) ?? 0;
        if (n >= this.maxPerUser) return; // waits for the next batch
        perUser.set(user, n + 1);
      }
      take.add(i);
      trainable++;
    });
    return { take, drop, trainable };
  }

  /**
   * Samples the GRPO batch at the head of the buffer still waits for (0 when the head is no such
   * batch, or it is whole). The consumer must not pause on a full buffer while this is above 0:
   * the batch is released only whole, so a pause would hold it until `maxWaitMs`.
   */
  missingOfHeadGroup(): number {
    const head = this.buffer[0]?.sample.group;
    if (!head) return 0;
    let members = 0;
    for (const p of this.buffer) if (p.sample.group?.batchId === head.batchId) members++;
    return Math.max(0, head.batchSamples - members);
  }

  /** A full batch is available, or a partial one whose oldest sample has waited `maxWaitMs`. */
  ready(currentVersion: number, now = Date.now()): boolean {
    const grouped = this.groupPlan(currentVersion);
    if (grouped) return grouped.complete || now - this.buffer[0].receivedAt >= this.maxWaitMs;
    const { take, drop, trainable } = this.plan(currentVersion);
    if (trainable > 0 && trainable < this.minSamples) return false;
    if (trainable >= this.batchSize) return true;
    if (take.size === 0) return drop.size > 0 && now - this.buffer[0].receivedAt >= this.maxWaitMs;
    const oldest = Math.min(...[...take].map((i) => this.buffer[i].receivedAt));
    return now - oldest >= this.maxWaitMs;
  }

  /**
   * Takes the next batch: up to `batchSize` samples in arrival order under the per-user cap, and
   * every too-stale sample met on the way (dropped). Capped samples stay buffered.
   */
  take(currentVersion: number): TakenBatch<M> {
    const { take, drop } = this.plan(currentVersion);
    const batch: TakenBatch<M>['batch'] = [];
    const dropped: Array<Pending<M>> = [];
    const rest: Array<Pending<M>> = [];
    this.buffer.forEach((p, i) => {
      if (take.has(i)) batch.push({ ...p, stale: this.isStale(p.sample, currentVersion) });
      else if (drop.has(i)) dropped.push(p);
      else rest.push(p);
    });
    this.buffer = rest;
    return { batch, dropped };
  }
}
