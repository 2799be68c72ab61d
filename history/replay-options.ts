/** What `runReplay` takes, reports while it runs and returns (history/replay.ts). */
import type { Judge, SampleBuilderOptions, SessionAssemblerOptions } from '../processors/index.ts';
import type { Logger } from '../core/index.ts';
import type { RegistrySecurity } from '../schemas/index.ts';
import type { Kafka } from 'kafkajs';
import type { Bound } from './replay-range.ts';

export interface ReplayOptions {
  kafka: Kafka;
  registryUrl: string;
  /** Basic auth and TLS trust of the registry. @default none */
  registrySecurity?: RegistrySecurity;
  /** Topic and group prefix (tests isolate themselves with one). @default '' */
  prefix?: string;
  /** Replay tag: names the output topics and the groups. Letters, digits, `-` and `_`. */
  tag: string;
  from: Bound;
  /** @default the current end of the history */
  to?: Bound;
  judge: Judge;
  /** Judge untokenized (imported) turns too. @default true */
  judgeUntrainable?: boolean;
  /** The session assembler's configuration: the live service's, for the live pairs. @default the assembler's defaults */
  assembler?: Pick<SessionAssemblerOptions, 'idleTimeoutMs' | 'endPolicy' | 'feedbackGraceMs' | 'closedRetentionMs'>;
  samples?: SampleBuilderOptions;
  /** Judge and teacher calls in flight. @default 64 */
  concurrency?: number;
  /** Pairs per transaction (their judgements and samples go with them). @default 2000 */
  batchSize?: number;
  /** Where the resolved range is kept for resuming (one file per prefix + tag). */
  planFile: string;
  /** Partitions of the tagged topics, when they are created. @default 6 */
  partitions?: number;
  onProgress?: (p: ReplayProgress) => void;
  /** Cancels the replay (stages stop cleanly; run it again to resume). */
  signal?: AbortSignal;
  logger?: Logger;
}

export type StageName = 'session-assembler' | 'judge' | 'sample-builder';

export interface StageProgress {
  stage: StageName;
  /** Offsets consumed of `total` (tagged topics count transaction markers too). */
  consumed: number;
  total: number;
  done: boolean;
}

export interface ReplayProgress {
  stages: StageProgress[];
}

export interface ReplaySummary {
  tag: string;
  from: string;
  to: string | null;
  /** True when an earlier run of this replay was continued. */
  resumed: boolean;
  interrupted: boolean;
  range: { turns: number; feedback: number };
  /** Records after the range's end that were fetched and left out: 0, the range is read to its exact offsets. */
  skippedPastEnd: number;
  topics: ReplayOutputTopics;
  /** `withNextState`: pairs with something that followed the turn (the rest are end markers alone). */
  pairs: { total: number; byEnd: Record<string, number>; withNextState: number };
  /** `votes`: valid votes over all judgements; `withoutVotes`: judgements with nothing to judge (no next state, no feedback). */
  judgements: { total: number; byScore: Record<string, number>; judgeIds: string[]; votes: number; withoutVotes: number };
  samples: { total: number; byMethod: Record<string, number>; byReward: Record<string, number>; masked: number };
  deadLetters: { total: number; byStage: Record<string, number> };
  durationMs: number;
}

/** The tagged topics a replay writes. */
export type ReplayOutputTopics = Record<'pairs' | 'judgements' | 'samples' | 'dlq', string>;
