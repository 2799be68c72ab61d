/** What the stages of one replay share while it runs (history/replay.ts builds it). */
import type { EventCodecs, Transactions } from '../streams/index.ts';
import type { Logger } from '../core/index.ts';
import type { OrderedCommits } from './ordered-commits.ts';
import type { ReplayOptions, ReplayOutputTopics } from './replay-options.ts';
import type { ReplayPositions } from './replay-positions.ts';
import type { ReplayProgressCounter } from './replay-progress.ts';
import type { OutputTally } from './summary.ts';

export interface ReplayRun {
  o: ReplayOptions;
  log: Logger;
  /** Codecs of the tagged family (they read the live topics too). */
  codecs: EventCodecs;
  topics: ReplayOutputTopics;
  /** The replay's group: its committed offsets are the position reached in the range. */
  groupId: string;
  positions: ReplayPositions;
  progress: ReplayProgressCounter;
  tally: OutputTally;
  txns: Transactions;
  commits: OrderedCommits;
  /** Pairs per transaction. */
  batchSize: number;
  /** Judge and teacher calls in flight. */
  concurrency: number;
  judgeUntrainable: boolean;
}

/** Thrown when the replay's signal aborts it between batches. */
export class Interrupted extends Error {}

export const aborted = (run: Pick<ReplayRun, 'o'>): boolean => run.o.signal?.aborted === true;
