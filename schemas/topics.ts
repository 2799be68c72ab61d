/**
 * The topic catalogue of docs/design/architecture.md: every topic's name, value schema and cleanup
 * policy. Names can carry a prefix (tests isolate themselves with one) and a replay tag.
 */
import {
  batchStateSchema,
  deadLetterSchema,
  deadLetterReplaySchema,
  rewardSchema,
  trajectorySchema,
  trajectoryStateSchema,
  feedbackSchema,
  judgementSchema,
  sampleSchema,
  sessionStateSchema,
  turnPairSchema,
  turnSchema,
  weightChunkSchema,
  weightVersionSchema,
} from './avro.ts';
import type {
  BatchState,
  DeadLetter,
  DeadLetterReplay,
  Feedback,
  Judgement,
  Reward,
  Sample,
  SessionState,
  Trajectory,
  TrajectoryState,
  Turn,
  TurnPair,
  WeightChunk,
  WeightVersion,
} from './types.ts';

export interface TopicSpec<T = unknown> {
  /** Logical name, e.g. `turns`. */
  readonly id: TopicId;
  /** Base name, e.g. `turnstream.turns.v1`. */
  readonly base: string;
  readonly schema: () => unknown;
  readonly cleanup: 'delete' | 'compact' | 'compact,delete';
  /** -1 keeps forever (the history). */
  readonly retentionMs: number;
  /** What the key holds. */
  readonly key: string;
  /**
   * The topic's `max.message.bytes`, set on creation (and on existing topics by ensureTopics):
   * the largest record batch the broker accepts. The gateway shrinks a Turn to fit its topic
   * before it enters the outbox; the processor runtime dead-letters an input whose output would
   * not fit, rather than retrying a transaction the broker refuses.
   */
  readonly maxMessageBytes: number;
  /** Phantom type carrier. */
  readonly _type?: T;
}

const WEEK = 7 * 24 * 3600 * 1000;
const MiB = 1024 * 1024;

export const TOPICS = {
  turns: {
    id: 'turns',
    base: 'turnstream.turns.v1',
    schema: turnSchema,
    cleanup: 'delete',
    retentionMs: -1,
    key: 'sessionId',
    maxMessageBytes: MiB,
  } as TopicSpec<Turn>,
  feedback: {
    id: 'feedback',
    base: 'turnstream.feedback.v1',
    schema: feedbackSchema,
    cleanup: 'delete',
    retentionMs: -1,
    key: 'sessionId',
    maxMessageBytes: MiB,
  } as TopicSpec<Feedback>,
  sessionState: {
    id: 'sessionState',
    base: 'turnstream.session-state.v1',
    schema: sessionStateSchema,
    cleanup: 'compact',
    retentionMs: -1,
    key: 'sessionId',
    maxMessageBytes: 4 * MiB,
  } as TopicSpec<SessionState>,
  pairs: {
    id: 'pairs',
    base: 'turnstream.pairs.v1',
    schema: turnPairSchema,
    cleanup: 'delete',
    retentionMs: 4 * WEEK,
    key: 'sessionId',
    maxMessageBytes: 4 * MiB,
  } as TopicSpec<TurnPair>,
  judgements: {
    id: 'judgements',
    base: 'turnstream.judgements.v1',
    schema: judgementSchema,
    cleanup: 'delete',
    retentionMs: 4 * WEEK,
    key: 'turnId',
    maxMessageBytes: 4 * MiB,
  } as TopicSpec<Judgement>,
  samples: {
    id: 'samples',
    base: 'turnstream.samples.v1',
    schema: sampleSchema,
    cleanup: 'delete',
    retentionMs: 4 * WEEK,
    key: 'sessionId',
    maxMessageBytes: 4 * MiB,
  } as TopicSpec<Sample>,
  weights: {
    id: 'weights',
    base: 'turnstream.weights.v1',
    schema: weightVersionSchema,
    cleanup: 'compact,delete',
    retentionMs: 52 * WEEK,
    key: 'modelId',
    maxMessageBytes: MiB,
  } as TopicSpec<WeightVersion>,
  weightBlobs: {
    id: 'weightBlobs',
    base: 'turnstream.weight-blobs.v1',
    schema: weightChunkSchema,
    // Kept as long as the weight store keeps its versions (every one); compaction keeps the last
    // record of each chunk key and drops what aborted transactions wrote.
    cleanup: 'compact',
    retentionMs: -1,
    key: '<modelId>/<version>/<index>',
    // A chunk is at most WEIGHT_CHUNK_BYTES (256 KiB) of data, sent in a record batch of its own.
    maxMessageBytes: MiB,
  } as TopicSpec<WeightChunk>,
  rewards: {
    id: 'rewards',
    base: 'turnstream.rewards.v1',
    schema: rewardSchema,
    cleanup: 'delete',
    retentionMs: -1,
    key: 'sessionId',
    maxMessageBytes: MiB,
  } as TopicSpec<Reward>,
  trajectoryState: {
    id: 'trajectoryState',
    base: 'turnstream.trajectory-state.v1',
    schema: trajectoryStateSchema,
    cleanup: 'compact',
    retentionMs: -1,
    key: 'sessionId',
    maxMessageBytes: 4 * MiB,
  } as TopicSpec<TrajectoryState>,
  trajectories: {
    id: 'trajectories',
    base: 'turnstream.trajectories.v1',
    schema: trajectorySchema,
    cleanup: 'delete',
    retentionMs: 4 * WEEK,
    key: 'batchId',
    maxMessageBytes: 4 * MiB,
  } as TopicSpec<Trajectory>,
  batchState: {
    id: 'batchState',
    base: 'turnstream.batch-state.v1',
    schema: batchStateSchema,
    cleanup: 'compact',
    retentionMs: -1,
    key: 'batchId',
    maxMessageBytes: 16 * MiB,
  } as TopicSpec<BatchState>,
  dlq: {
    id: 'dlq',
    base: 'turnstream.dlq.v1',
    schema: deadLetterSchema,
    cleanup: 'delete',
    retentionMs: 4 * WEEK,
    key: 'original key',
    maxMessageBytes: 8 * MiB,
  } as TopicSpec<DeadLetter>,
  dlqReplays: {
    id: 'dlqReplays',
    base: 'turnstream.dlq-replays.v1',
    schema: deadLetterReplaySchema,
    cleanup: 'compact',
    retentionMs: -1,
    key: 'deadLetterId',
    maxMessageBytes: 1 * MiB,
  } as TopicSpec<DeadLetterReplay>,
} as const;

export type TopicId =
  | 'turns'
  | 'feedback'
  | 'sessionState'
  | 'pairs'
  | 'judgements'
  | 'samples'
  | 'weights'
  | 'weightBlobs'
  | 'rewards'
  | 'trajectoryState'
  | 'trajectories'
  | 'batchState'
  | 'dlq'
  | 'dlqReplays';

/** Where a topic family lives: a prefix for isolation and an optional replay tag. */
export interface TopicNaming {
  /** Prepended to every name. @default '' */
  prefix?: string;
  /** Replay tag: derived topics become `turnstream.replay.<tag>.<name>`. @default undefined (live) */
  tag?: string;
}

/** Topics whose content a replay re-derives (the rest are shared with the live pipeline). */
const DERIVED: ReadonlySet<TopicId> = new Set([
  'sessionState',
  'pairs',
  'judgements',
  'samples',
  'trajectoryState',
  'trajectories',
  'batchState',
  'dlq',
  'dlqReplays',
]);

export function topicName(id: TopicId, naming: TopicNaming = {}): string {
  const base = TOPICS[id].base;
  const prefix = naming.prefix ?? '';
  if (naming.tag && DERIVED.has(id)) return `${prefix}${base.replace(/^turnstream\./, `turnstream.replay.${naming.tag}.`)}`;
  return `${prefix}${base}`;
}

/** TopicNameStrategy: `<topic>-value`. */
export const valueSubject = (topic: string): string => `${topic}-value`;
