/**
 * Events → analytics rows: the flat columns the queries need, keyed by the event's
 * deterministic id (so a re-delivered event replaces itself). Kept beside the DDL in
 * migrations.ts: a column added there is filled here.
 */
import type { DeadLetter, Feedback, Judgement, Reward, Sample, TopicId, Turn, TurnPair, WeightVersion } from '../schemas/index.ts';
import { invalidInput } from '../core/index.ts';
import { REPLAY_KEYS, type TableId } from './tables.ts';

/** Where a record was read; every row carries it. */
export interface SourcePosition {
  topic: string;
  partition: number;
  offset: string;
  /**
   * Replay tag of the topic the record was read from ('' = the live pipeline). Stored as
   * `replay_tag` in the tables a replay writes to, where it is part of the row's key.
   * @default ''
   */
  replayTag?: string;
}

export type Row = Record<string, string | number>;

export interface MappedRow {
  table: TableId;
  row: Row;
}

const nonEmpty = (v: string, field: string): string => {
  if (typeof v !== 'string' || v.length === 0) throw invalidInput(`${field} is empty`, field);
  return v;
};
/** Non-negative integer for UInt columns (a negative or fractional value is a bad event). */
const uint = (v: number, field: string): number => {
  if (!Number.isFinite(v) || v < 0) throw invalidInput(`${field} must be a non-negative number, got ${v}`, field);
  return Math.floor(v);
};
const finite = (v: number, field: string): number => {
  if (!Number.isFinite(v)) throw invalidInput(`${field} must be finite, got ${v}`, field);
  return v;
};
const bit = (b: boolean): number => (b ? 1 : 0);

/** Adds the source columns to a row built for this call. */
function addSource(row: Row, p: SourcePosition, now: number): Row {
  row._topic = p.topic;
  row._partition = p.partition;
  row._offset = Number(p.offset);
  row.ingested_at = Math.floor(now / 1000);
  return row;
}

export function turnRow(e: Turn): Row {
  return {
    turn_id: nonEmpty(e.turnId, 'turnId'),
    session_id: nonEmpty(e.sessionId, 'sessionId'),
    session_source: e.sessionSource,
    user_id: e.userId ?? '',
    turn_type: e.turnType,
    session_done: bit(e.sessionDone),
    model: e.model,
    policy_model_id: e.policyModelId,
    policy_version: uint(e.policyVersion, 'policyVersion'),
    requested_at_ms: uint(e.requestedAt, 'requestedAt'),
    completed_at_ms: uint(e.completedAt, 'completedAt'),
    latency_ms: finite(e.latencyMs, 'latencyMs'),
    prompt_tokens: uint(e.usage.promptTokens, 'usage.promptTokens'),
    completion_tokens: uint(e.usage.completionTokens, 'usage.completionTokens'),
    total_tokens: uint(e.usage.totalTokens, 'usage.totalTokens'),
    prompt_truncated_tokens: uint(e.promptTruncatedTokens, 'promptTruncatedTokens'),
    request_messages: e.requestMessages.length,
    response_chars: e.response.content?.length ?? 0,
    tool_calls: e.response.toolCalls.length,
    finish_reason: e.response.finishReason,
    tokenized: bit(e.tokenized),
    gateway_id: e.gatewayId,
    event: JSON.stringify(e),
    metadata: JSON.stringify(e.metadata ?? {}),
  };
}

export function feedbackRow(e: Feedback): Row {
  return {
    feedback_id: nonEmpty(e.feedbackId, 'feedbackId'),
    session_id: nonEmpty(e.sessionId, 'sessionId'),
    turn_id: e.turnId ?? '',
    user_id: e.userId ?? '',
    has_rating: bit(e.rating !== null),
    rating: e.rating === null ? 0 : Math.sign(finite(e.rating, 'rating')),
    text: e.text ?? '',
    created_at_ms: uint(e.createdAt, 'createdAt'),
  };
}

export function pairRow(e: TurnPair): Row {
  return {
    pair_id: nonEmpty(e.pairId, 'pairId'),
    session_id: nonEmpty(e.sessionId, 'sessionId'),
    user_id: e.userId ?? '',
    policy_model_id: e.turn.policyModelId,
    policy_version: uint(e.turn.policyVersion, 'turn.policyVersion'),
    main_turn_index: uint(e.turn.mainTurnIndex, 'turn.mainTurnIndex'),
    next_state_items: e.nextState.length,
    next_roles: [...new Set(e.nextState.map((n) => n.role))].join(','),
    end_marker: e.endMarker ?? '',
    feedback_count: e.feedback.length,
    feedback_rating_sum: e.feedback.reduce((s, f) => s + (f.rating ?? 0), 0),
    history_verified: bit(e.historyVerified),
    requested_at_ms: uint(e.turn.requestedAt, 'turn.requestedAt'),
    created_at_ms: uint(e.createdAt, 'createdAt'),
    tag: e.tag ?? '',
  };
}

export function judgementRow(e: Judgement): Row {
  const valid = e.votes.filter((v) => v.score !== null);
  const latencies = e.votes.map((v) => v.latencyMs);
  return {
    judgement_id: nonEmpty(e.judgementId, 'judgementId'),
    turn_id: nonEmpty(e.turnId, 'turnId'),
    session_id: e.sessionId,
    user_id: e.userId ?? '',
    policy_version: uint(e.policyVersion, 'policyVersion'),
    judge_id: e.judgeId,
    score: Math.sign(finite(e.score, 'score')),
    votes: e.votes.length,
    votes_valid: valid.length,
    votes_failed: e.votes.length - valid.length,
    // Agreement: valid votes equal to the majority score.
    votes_agree: valid.filter((v) => v.score === e.score).length,
    vote_latency_ms_avg: latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : 0,
    vote_latency_ms_max: latencies.length ? Math.max(...latencies) : 0,
    vote_attempts: e.votes.reduce((s, v) => s + v.attempts, 0),
    has_hint: bit(e.hint !== null && e.hint.length > 0),
    created_at_ms: uint(e.createdAt, 'createdAt'),
    tag: e.tag ?? '',
    votes_json: JSON.stringify(e.votes),
  };
}

export function sampleRow(e: Sample): Row {
  return {
    sample_id: nonEmpty(e.sampleId, 'sampleId'),
    turn_id: e.turnId,
    session_id: e.sessionId,
    user_id: e.userId ?? '',
    policy_model_id: e.policyModelId,
    policy_version: uint(e.policyVersion, 'policyVersion'),
    method: e.method,
    reward: finite(e.reward, 'reward'),
    weight: finite(e.weight, 'weight'),
    prompt_length: uint(e.promptLength, 'promptLength'),
    response_length: uint(e.responseLength, 'responseLength'),
    trained_tokens: e.lossMask.reduce((s, m) => s + (m ? 1 : 0), 0),
    has_teacher: bit(e.teacherLogprobs !== null),
    judge_id: e.judgeId,
    created_at_ms: uint(e.createdAt, 'createdAt'),
    tag: e.tag ?? '',
  };
}

export function weightRow(e: WeightVersion): Row {
  const m = e.metrics;
  return {
    weight_id: `${nonEmpty(e.modelId, 'modelId')}:${uint(e.version, 'version')}`,
    model_id: e.modelId,
    version: e.version,
    parent_version: e.parentVersion ?? -1,
    uri: e.uri,
    sha256: e.sha256,
    format: e.format,
    base_model: e.baseModel,
    loss: finite(m.loss, 'metrics.loss'),
    mean_reward: finite(m.meanReward, 'metrics.meanReward'),
    kl: finite(m.kl, 'metrics.kl'),
    clip_fraction: finite(m.clipFraction, 'metrics.clipFraction'),
    samples: uint(m.samples, 'metrics.samples'),
    tokens: uint(m.tokens, 'metrics.tokens'),
    logprob_drift: finite(m.logprobDrift, 'metrics.logprobDrift'),
    dropped_stale: uint(m.droppedStale, 'metrics.droppedStale'),
    steps: uint(m.steps, 'metrics.steps'),
    mismatch_kl: finite(m.mismatchKl ?? 0, 'metrics.mismatchKl'),
    tis_mean: finite(m.tisMean ?? 1, 'metrics.tisMean'),
    tis_truncated: finite(m.tisTruncated ?? 0, 'metrics.tisTruncated'),
    step_seconds: finite(m.stepSeconds ?? 0, 'metrics.stepSeconds'),
    created_at_ms: uint(e.createdAt, 'createdAt'),
    event: JSON.stringify(e),
  };
}

export function deadLetterRow(e: DeadLetter): Row {
  return {
    // The failed record's coordinates and stage: the same failure dead-lettered twice is one row.
    dlq_id: `${e.stage}|${e.topic}|${e.partition}|${e.offset}`,
    topic: e.topic,
    partition: uint(e.partition, 'partition'),
    offset: e.offset,
    code: e.code,
    stage: e.stage,
    message: e.message,
    failed_at_ms: uint(e.failedAt, 'failedAt'),
    attempts: uint(e.attempts, 'attempts'),
    key: e.key ? e.key.toString('utf8') : '',
    value_bytes: e.value?.length ?? 0,
    value_base64: e.value ? e.value.toString('base64') : '',
  };
}

/** A verifier's outcome: one row per rollout (or other rewarded session), with where it belongs. */
export function rewardRow(e: Reward): Row {
  const r = e.rollout;
  return {
    reward_id: nonEmpty(e.rewardId, 'rewardId'),
    session_id: nonEmpty(e.sessionId, 'sessionId'),
    user_id: e.userId ?? '',
    source: e.source,
    reward: finite(e.reward, 'reward'),
    passed: e.passed === null ? -1 : bit(e.passed),
    detail: e.detail ?? '',
    turn_count: e.turnIds.length,
    policy_model_id: e.policyModelId ?? '',
    policy_version: e.policyVersion ?? -1,
    suite: r?.suite ?? '',
    task_id: r?.taskId ?? '',
    group_id: r?.groupId ?? '',
    batch_id: r?.batchId ?? '',
    rollout_index: r?.index ?? -1,
    group_size: r?.groupSize ?? 0,
    split: r?.split ?? '',
    parts: e.parts && Object.keys(e.parts).length > 0 ? JSON.stringify(e.parts) : '',
    created_at_ms: uint(e.createdAt, 'createdAt'),
  };
}

/** Each stored topic: the table it lands in and how its event becomes a row (session state, a changelog, is not stored). */
const STORED: Partial<Record<TopicId, { table: TableId; row: (value: unknown) => Row }>> = {
  turns: { table: 'turns', row: (v) => turnRow(v as Turn) },
  feedback: { table: 'feedback', row: (v) => feedbackRow(v as Feedback) },
  pairs: { table: 'pairs', row: (v) => pairRow(v as TurnPair) },
  judgements: { table: 'judgements', row: (v) => judgementRow(v as Judgement) },
  samples: { table: 'samples', row: (v) => sampleRow(v as Sample) },
  weights: { table: 'weights', row: (v) => weightRow(v as WeightVersion) },
  dlq: { table: 'dlq', row: (v) => deadLetterRow(v as DeadLetter) },
  rewards: { table: 'rewards', row: (v) => rewardRow(v as Reward) },
};

/** Which table each stored topic lands in. */
export const TABLE_OF: Partial<Record<TopicId, TableId>> = Object.fromEntries(
  Object.entries(STORED).map(([id, stored]) => [id, stored.table]),
);

/** Tables whose rows carry `replay_tag` (migration 2): what a replay re-derives. */
export const REPLAY_TABLES: ReadonlySet<TableId> = new Set(REPLAY_KEYS.map(([table]) => table));

/** Maps one decoded event of topic `id` to its row; throws TS_ERR_INVALID_INPUT when it cannot. */
export function toRow(id: TopicId, value: unknown, at: SourcePosition, now = Date.now()): MappedRow {
  const stored = STORED[id];
  if (!stored) throw invalidInput(`topic ${id} is not stored in analytics`);
  const { table } = stored;
  const row = stored.row(value);
  if (REPLAY_TABLES.has(table)) row.replay_tag = at.replayTag ?? '';
  return { table, row: addSource(row, at, now) };
}
