/**
 * Rollout batches, pure logic (the service is group-builder-service.ts): trajectories keyed by
 * batch are gathered until the batch has all of them (its groups × group size), or until
 * `batchTimeoutMs` after the first came; then the batch's samples go out together (batch-samples.ts).
 */
import { GROUP_BUILDER_DEFAULTS } from '../defaults.ts';
import type { BatchState, Sample, Trajectory } from '../../schemas/index.ts';
import { batchSamples, type BatchReport } from './batch-samples.ts';

export interface GroupBuilderOptions {
  /** Divide the advantages by the group's standard deviation (GRPO); off: r − mean. `GRPO_NORMALIZE_STD` @default GROUP_BUILDER_DEFAULTS.normalizeStd (true) */
  normalizeStd?: boolean;
  /** A batch still missing trajectories this long after its first is trained on what it has, ms. `GRPO_BATCH_TIMEOUT_MS` @default GROUP_BUILDER_DEFAULTS.batchTimeoutMs (300000) */
  batchTimeoutMs?: number;
  /** A finished batch is remembered this long, so a late trajectory is ignored, ms. @default GROUP_BUILDER_DEFAULTS.retainDoneMs (1 h) */
  retainDoneMs?: number;
}

export interface BatchStore {
  get(key: string): BatchState | undefined;
  put(key: string, value: BatchState): void;
  delete(key: string): void;
}

export interface BatchEvents {
  batch?(report: BatchReport, timedOut: boolean): void;
  ignored?(reason: string): void;
}

export class BatchCore {
  readonly batchTimeoutMs: number;
  readonly retainDoneMs: number;

  constructor(
    private readonly options: GroupBuilderOptions = {},
    private readonly events: BatchEvents = {},
  ) {
    this.batchTimeoutMs = options.batchTimeoutMs ?? GROUP_BUILDER_DEFAULTS.batchTimeoutMs;
    this.retainDoneMs = options.retainDoneMs ?? GROUP_BUILDER_DEFAULTS.retainDoneMs;
  }

  handle(trajectories: readonly Trajectory[], store: BatchStore, now: number, emit: (s: Sample) => void): void {
    for (const t of trajectories) {
      const r = t.reward.rollout;
      if (!r) {
        this.events.ignored?.('not a rollout');
        continue;
      }
      const st = store.get(r.batchId) ?? { batchId: r.batchId, trajectories: [], firstSeenAt: now, done: false, updatedAt: now };
      if (st.done) {
        this.events.ignored?.('late');
        continue;
      }
      if (st.trajectories.some((x) => x.sessionId === t.sessionId)) {
        this.events.ignored?.('duplicate');
        continue;
      }
      st.trajectories.push(t);
      st.updatedAt = now;
      if (st.trajectories.length >= r.batchGroups * r.groupSize) this.release(st, store, now, emit, false);
      else store.put(st.batchId, st);
    }
  }

  private release(st: BatchState, store: BatchStore, now: number, emit: (s: Sample) => void, timedOut: boolean): void {
    const { samples, report } = batchSamples(st.batchId, st.trajectories, { normalizeStd: this.options.normalizeStd, now });
    for (const s of samples) emit(s);
    this.events.batch?.(report, timedOut);
    store.put(st.batchId, { ...st, trajectories: [], done: true, updatedAt: now });
  }

  /** Lets go of batches that waited too long; forgets old finished ones. */
  punctuate(store: BatchStore & { entries(): IterableIterator<[string, BatchState]> }, now: number, emit: (s: Sample) => void): void {
    for (const [key, st] of [...store.entries()]) {
      if (st.done) {
        if (now - st.updatedAt >= this.retainDoneMs) store.delete(key);
      } else if (now - st.firstSeenAt >= this.batchTimeoutMs) this.release(st, store, now, emit, true);
    }
  }
}
