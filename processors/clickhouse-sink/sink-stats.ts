/** What the sink has done: the counts its handle reports (`stats()`) and its Prometheus metrics, kept in step. */
import type { TableId } from '../../warehouse/index.ts';
import { sinkMetrics } from './metrics.ts';

export interface SinkStats {
  /** Records read from Kafka (all topics). */
  consumed: number;
  rowsInserted: number;
  batches: number;
  /** Failed insert attempts. */
  insertFailures: number;
  deadLettered: number;
  skipped: number;
  buffered: number;
  /** Fetching is paused (ClickHouse failing). */
  paused: boolean;
  /** Offsets committed (partition commits). */
  commits: number;
  lastError: string | undefined;
  /** Topics the consumer is subscribed to (live, then replay-tagged). */
  topics: string[];
  /** Times the consumer rejoined to pick up new replay topics. */
  rejoins: number;
}

/** The sink's own counts; the consumer's (commits, paused, topics, rejoins) come from the consumer. */
export type SinkCounts = Omit<SinkStats, 'commits' | 'paused' | 'topics' | 'rejoins'>;

/** Why a record left no row and no dead letter. */
export type SkipReason = 'tombstone' | 'unknown_topic' | 'bad_dead_letter';

export class SinkCounters {
  readonly counts: SinkCounts = {
    consumed: 0,
    rowsInserted: 0,
    batches: 0,
    insertFailures: 0,
    deadLettered: 0,
    skipped: 0,
    buffered: 0,
    lastError: undefined,
  };

  consumed(): void {
    this.counts.consumed++;
  }

  skipped(reason: SkipReason): void {
    this.counts.skipped++;
    sinkMetrics.skipped.inc({ reason });
  }

  deadLettered(code: string): void {
    this.counts.deadLettered++;
    sinkMetrics.deadLetters.inc({ code });
  }

  /** One table's insert of a flush succeeded. */
  inserted(table: TableId, rows: number): void {
    this.counts.rowsInserted += rows;
    sinkMetrics.rows.inc({ table }, rows);
  }

  insertFailed(err: unknown): void {
    this.counts.insertFailures++;
    sinkMetrics.failures.inc();
    this.counts.lastError = (err as Error).message;
  }

  /** A whole flush succeeded, in `seconds`. */
  flushed(seconds: number): void {
    sinkMetrics.insertSeconds.observe(seconds);
    sinkMetrics.batches.inc();
    this.counts.batches++;
  }

  buffered(rows: number): void {
    this.counts.buffered = rows;
    sinkMetrics.buffered.set(rows);
  }

  paused(paused: boolean): void {
    sinkMetrics.paused.set(paused ? 1 : 0);
  }
}
