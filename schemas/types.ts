/**
 * TypeScript shapes of turnstream's events. They mirror the Avro schemas in ./avro.ts
 * field for field; test/unit/schemas/schemas.test.ts checks that they stay in sync.
 * Timestamps are epoch milliseconds; `long`s are JS numbers (exact below 2^53).
 */

export type SessionSource = 'HEADER' | 'BODY' | 'INFERRED' | 'GENERATED' | 'IMPORTED';
export type TurnType = 'MAIN' | 'SIDE';
export type NextStateRole = 'USER' | 'TOOL' | 'ENVIRONMENT' | 'FEEDBACK';
export type EndMarker = 'SESSION_DONE' | 'IDLE_TIMEOUT';
export type SampleMethod = 'RL' | 'OPD' | 'COMBINED';

export interface ToolCall {
  id: string;
  type: string;
  name: string;
  /** The arguments exactly as the model produced them (a JSON string). */
  arguments: string;
}

/** One request message; content parts are flattened to text, tool calls kept. */
export interface ChatMessage {
  role: string;
  content: string | null;
  name: string | null;
  toolCallId: string | null;
  toolCalls: ToolCall[];
}

export interface AssistantResponse {
  content: string | null;
  toolCalls: ToolCall[];
  /** stop | length | tool_calls | content_filter | error */
  finishReason: string;
}

export interface SamplingParams {
  temperature: number | null;
  topP: number | null;
  maxTokens: number | null;
  seed: number | null;
  stop: string[];
  /** OpenAI `presence_penalty` when the engine applied one; null or absent otherwise. */
  presencePenalty?: number | null;
  /** OpenAI `frequency_penalty` when the engine applied one; null or absent otherwise. */
  frequencyPenalty?: number | null;
  /** The request's `response_format` as JSON when it constrained the answer (json_object, json_schema); null or absent otherwise. */
  responseFormat?: string | null;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** A model call's tokens as the engine used them, and whether their log-probs are exact (Turn, PairTurn, TrajectoryStep). */
export interface RolloutTokens {
  /** Token ids the engine actually used (after truncation). */
  promptTokenIds: number[];
  responseTokenIds: number[];
  /** log π_rollout of each response token, as the engine produced it. */
  responseLogprobs: number[];
  /** False when the engine gave no token ids: not trainable by token-level methods. */
  tokenized: boolean;
  /**
   * True when `responseLogprobs` are the engine's log-probs of the sampled tokens under the
   * distribution they were drawn from: the model's logits ÷ `sampling.temperature`, renormalised
   * over the `sampling.topP` nucleus (the greedy token's own log-prob at temperature 0). The
   * trainer scores the same distribution, so the two differ only by the engines (quantization).
   * False when the engine could not say (an upstream without them, a grammar or penalties shaped
   * the draw): such turns train without the importance correction.
   */
  exactLogprobs: boolean;
}

/** How a response was drawn, so that the trainer scores it under the same distribution (PairTurn, TrajectoryStep, Sample). */
export interface RolloutSampling {
  /**
   * The temperature the response was sampled at: the trainer scores its tokens under logits ÷ T
   * (0, greedy, is scored at 1). @default 1
   */
  samplingTemperature?: number;
  /** The top-p nucleus the response was drawn from: the trainer renormalises over the same set. @default 1 */
  samplingTopP?: number;
  /**
   * Prompt tokens up to the end of the first user message (the system message and the task): a
   * trainer that must shorten a long prompt cuts its middle and keeps these. 0 when unknown. @default 0
   */
  promptHeadTokens?: number;
}

/** One API call to the gateway. Key: sessionId. */
export interface Turn extends RolloutTokens, Pick<RolloutSampling, 'promptHeadTokens'> {
  turnId: string;
  sessionId: string;
  sessionSource: SessionSource;
  userId: string | null;
  turnType: TurnType;
  /** The client said this turn ends the session (X-Session-Done / session_done). */
  sessionDone: boolean;
  requestedAt: number;
  completedAt: number;
  /** The model name the client asked for. */
  model: string;
  /** Which weights answered: the model id of the policy (or upstream model). */
  policyModelId: string;
  policyVersion: number;
  requestMessages: ChatMessage[];
  /** `tools` as sent, as JSON, or null. */
  toolsJson: string | null;
  response: AssistantResponse;
  /** Prompt tokens dropped by the truncation policy (0 when none). */
  promptTruncatedTokens: number;
  sampling: SamplingParams;
  usage: Usage;
  latencyMs: number;
  gatewayId: string;
  /**
   * What followed this turn's answer when no later turn carries it: an imported conversation that
   * ends with the user's reply (often the verdict: "👎", "perfect!"), or a record's next state.
   * It is the turn's next state should the session end here. Absent or empty for live turns:
   * the next turn's request carries what followed.
   */
  nextMessages?: ChatMessage[];
  /** The user of the service key that acted for `userId` (X-User-Id / `user`); null or absent otherwise. */
  actedBy?: string | null;
  /** Set when the gateway shrank the Turn to fit its topic (gateway/turn-fit.ts); null or absent otherwise. */
  truncation?: TurnTruncation | null;
  /** The request's OpenAI `metadata` (string pairs, at most 16), e.g. a gym rollout's task, group and index; absent or {} when none. */
  metadata?: Record<string, string>;
  /**
   * Which of its call's choices this turn is: a call with `n` > 1 (or several prompts to
   * `/v1/completions`) is one Turn per choice, each in a session of its own; 0 (or absent) for
   * the first.
   */
  choiceIndex?: number;
  /**
   * The prompt was the client's own text or token ids (`/v1/completions`), not messages rendered
   * with the chat template; `requestMessages` then holds it as one user message. Absent: false.
   */
  rawPrompt?: boolean;
}

/** How a Turn larger than its topic allows was shrunk (the rule: gateway/turn-fit.ts). */
export interface TurnTruncation {
  /** Encoded size of the Turn as captured. */
  originalBytes: number;
  /** Texts (message contents, the answer, tool call arguments, tools) that were cut. */
  truncatedFields: number;
  /** The length every cut text was cut to, in UTF-8 bytes. */
  maxFieldBytes: number;
  /** Token ids and log-probs were left out as well (the turn is then not token-trainable). */
  tokenIdsDropped: boolean;
  /** Where the gateway kept the Turn whole (a file on its machine), if it did. */
  keptIn: string | null;
}

/** Explicit feedback (👍/👎, text). Key: sessionId. */
export interface Feedback {
  feedbackId: string;
  sessionId: string;
  /** The turn it is about; null = the session's latest main turn. */
  turnId: string | null;
  userId: string | null;
  /** 1, -1, or null for text only. */
  rating: number | null;
  text: string | null;
  createdAt: number;
  /** The user of the service key that gave it for `userId`; null or absent otherwise. */
  actedBy?: string | null;
}

export interface FeedbackEvidence {
  feedbackId: string;
  rating: number | null;
  text: string | null;
  createdAt: number;
}

/** What the judge and the trainer need of a main turn. */
export interface PairTurn extends RolloutTokens, RolloutSampling {
  turnId: string;
  mainTurnIndex: number;
  policyModelId: string;
  policyVersion: number;
  model: string;
  requestMessages: ChatMessage[];
  response: AssistantResponse;
  /** The request's `tools`, as JSON (a teacher renders them as the engine did), or null. */
  toolsJson: string | null;
  requestedAt: number;
  completedAt: number;
  /** The turn's `nextMessages` (see `Turn`). */
  nextMessages?: ChatMessage[];
  /** As the Turn's. */
  metadata?: Record<string, string>;
}

export interface NextStateItem {
  role: NextStateRole;
  content: string;
  /** For TOOL items: which call this result answers. */
  toolCallId: string | null;
}

/** A main turn with what happened next. Key: sessionId. */
export interface TurnPair {
  /** = turn.turnId: one pair per main turn. */
  pairId: string;
  sessionId: string;
  userId: string | null;
  turn: PairTurn;
  /** The next state (all tool results when there were several); empty with an end marker. */
  nextState: NextStateItem[];
  endMarker: EndMarker | null;
  feedback: FeedbackEvidence[];
  /** Turn t+1's history really contained turn t's response. */
  historyVerified: boolean;
  createdAt: number;
  /** Replay tag; null on the live pipeline. */
  tag: string | null;
}

/** Changelog of the session assembler's per-session state. Key: sessionId. */
export interface SessionState {
  sessionId: string;
  userId: string | null;
  mainTurnCount: number;
  /** The newest main turn, still waiting for its next state. */
  pending: PairTurn | null;
  pendingFeedback: FeedbackEvidence[];
  /** Recently seen turn and feedback ids, for dedupe (bounded). */
  recentIds: string[];
  lastActivityAt: number;
  closed: boolean;
  closedReason: EndMarker | null;
  /** Pairs that are ready but held for the feedback grace period (in stream time). */
  held: TurnPair[];
  /** Feedback naming a turn not read yet (a backlog read out of order), kept for the grace period. */
  earlyFeedback: Feedback[];
}

export interface Vote {
  index: number;
  /** 1, 0, -1, or null for an invalid or failed vote. */
  score: number | null;
  hint: string | null;
  latencyMs: number;
  error: string | null;
  attempts: number;
}

/** The judge's verdict on a pair. Key: turnId. */
export interface Judgement {
  /** = turnId + ':' + judgeId */
  judgementId: string;
  turnId: string;
  sessionId: string;
  userId: string | null;
  policyVersion: number;
  judgeId: string;
  votes: Vote[];
  /** Majority score: 1, 0 or -1. */
  score: number;
  /** The accepted (longest valid) hint, for OPD. */
  hint: string | null;
  pair: TurnPair;
  createdAt: number;
  tag: string | null;
}

export interface TopKEntry {
  ids: number[];
  logprobs: number[];
}

/** One training sample. Key: sessionId. */
export interface Sample extends RolloutSampling {
  sampleId: string;
  turnId: string;
  sessionId: string;
  userId: string | null;
  policyModelId: string;
  policyVersion: number;
  method: SampleMethod;
  /** Prompt ids followed by response ids. */
  tokens: number[];
  promptLength: number;
  responseLength: number;
  /** One per response token: 1 = trained on. */
  lossMask: number[];
  /** One per response token. */
  rolloutLogprobs: number[];
  /** As the Turn's `exactLogprobs`: whether `rolloutLogprobs` are the engine's under the sampling distribution below. */
  exactLogprobs: boolean;
  reward: number;
  /** One per response token, or null (RL-only: the teacher term is exactly 0). */
  teacherLogprobs: number[] | null;
  /** Per response token, the teacher's top-k ids and log-probs, or null. */
  teacherTopK: TopKEntry[] | null;
  /**
   * The hinted teacher prompt's token ids, when the teacher is the trainer's own current policy
   * (the Llama family): the learner computes the teacher log-probs itself, with the same weights
   * as π_old, so the two differ only by the hint. Null otherwise.
   */
  teacherPromptTokens: number[] | null;
  /** Group / per-user weight. */
  weight: number;
  judgeId: string;
  createdAt: number;
  tag: string | null;
  /** Set on a step of a gym rollout trained by its group (GRPO); null or absent otherwise. */
  group?: SampleGroup | null;
}

/** Where a GRPO sample comes from, and what its advantage is made of. */
export interface SampleGroup {
  /** The rollout batch (the groups of one step): the learner trains on all of its samples at once. */
  batchId: string;
  /** How many samples the batch has. */
  batchSamples: number;
  groupId: string;
  taskId: string;
  rolloutIndex: number;
  /** The rollout's own reward (the verifier's). */
  outcome: number;
  /** outcome − the group's mean (÷ its std when asked): the sample's `reward`. */
  advantage: number;
}

/** Trained on; held out to choose settings (dev); held out to report (test); EVAL: held out, from before dev and test. */
export type RolloutSplit = 'TRAIN' | 'EVAL' | 'DEV' | 'TEST';

/** Where a gym rollout belongs. */
export interface RolloutInfo {
  suite: string;
  taskId: string;
  /** n rollouts of one task in one batch. */
  groupId: string;
  /** The groups of one step. */
  batchId: string;
  /** 0..groupSize−1 */
  index: number;
  groupSize: number;
  batchGroups: number;
  /** EVAL rollouts score a version and are never trained on. */
  split: RolloutSplit;
}

/** A verifier's outcome for a session. Key: sessionId. */
export interface Reward {
  /** Deterministic (session and source): a re-sent outcome dedupes. */
  rewardId: string;
  sessionId: string;
  userId: string | null;
  /** Who decided: `verifier:command`, `verifier:answer`, … */
  source: string;
  reward: number;
  passed: boolean | null;
  detail: string | null;
  /** The trajectory's model calls in order; empty: every main turn of the session read before the outcome settles. */
  turnIds: string[];
  /** The model id that served the rollout, when the sender knows it. */
  policyModelId: string | null;
  /** The version that served the rollout's first call (X-Policy-Version), when known. */
  policyVersion: number | null;
  rollout: RolloutInfo | null;
  createdAt: number;
  /** The verdict's named parts (e.g. content, format), each passed or not; the reward needs them all. @default {} */
  parts?: Record<string, boolean>;
}

/** What the learner needs of one model call of a rollout. */
export interface TrajectoryStep extends RolloutTokens, RolloutSampling {
  turnId: string;
  policyModelId: string;
  policyVersion: number;
  completedAt: number;
}

/** A rollout's model calls with its outcome. Key: the rollout's batchId. */
export interface Trajectory {
  sessionId: string;
  userId: string | null;
  reward: Reward;
  steps: TrajectoryStep[];
  /** Turns the outcome listed that were not read before the trajectory was let go. */
  missingTurns: number;
  createdAt: number;
  tag: string | null;
}

/** The trajectory assembler's state of one session. Key: sessionId. */
export interface TrajectoryState {
  sessionId: string;
  userId: string | null;
  steps: TrajectoryStep[];
  reward: Reward | null;
  rewardSeenAt: number | null;
  /** Its trajectory was emitted: later turns of the session are ignored. */
  done: boolean;
  updatedAt: number;
}

/** The group builder's state of one rollout batch. Key: batchId. */
export interface BatchState {
  batchId: string;
  trajectories: Trajectory[];
  firstSeenAt: number;
  done: boolean;
  updatedAt: number;
}

export interface TrainMetrics {
  loss: number;
  meanReward: number;
  kl: number;
  clipFraction: number;
  samples: number;
  tokens: number;
  /** Mean |engine − trainer| log-prob of the sampled tokens (exact samples), the rollout/trainer mismatch. */
  logprobDrift: number;
  droppedStale: number;
  steps: number;
  /** k3 estimate of KL(π_rollout ‖ π_trainer) over the same tokens. @default 0 */
  mismatchKl?: number;
  /** Mean truncated importance weight min(π_trainer/π_rollout, cap) over those tokens (1: none applied). @default 1 */
  tisMean?: number;
  /** Share of those tokens whose importance weight hit the cap. @default 0 */
  tisTruncated?: number;
  /** Wall time of the learner's step, seconds. @default 0 */
  stepSeconds?: number;
}

/** A published checkpoint. Key: modelId. */
export interface WeightVersion {
  modelId: string;
  version: number;
  parentVersion: number | null;
  uri: string;
  sha256: string;
  format: string;
  baseModel: string;
  metrics: TrainMetrics;
  createdAt: number;
}

/**
 * One piece of a weight version's files on `turnstream.weight-blobs.v1`, so that a gateway on
 * another host can fetch the version (policy/weight-transport.ts). Key: `<modelId>/<version>/<index>`.
 */
export interface WeightChunk {
  modelId: string;
  version: number;
  /** Position among the version's chunks, from 0. */
  index: number;
  /** How many chunks the version has (all its files). */
  count: number;
  /** The file this piece belongs to: a name in the version's folder. */
  file: string;
  /** Where the piece starts in its file. */
  fileOffset: number;
  fileBytes: number;
  fileSha256: string;
  /** sha256 of `data`. */
  sha256: string;
  data: Buffer;
  createdAt: number;
}

/** A record a stage could not decode or process. Key: the original key. */
export interface DeadLetter {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  code: string;
  message: string;
  /** Which service sent it here (gateway, session-assembler, judge, …). */
  stage: string;
  failedAt: number;
  attempts: number;
}

/**
 * A dead letter re-sent to its original topic (`turnstream dlq replay`), written in the same
 * transaction as the re-sent record: the ledger that keeps a letter from being re-sent twice.
 * Key: the dead letter's id.
 */
export interface DeadLetterReplay {
  /** The dead letter's id: `deterministicId('dead-letter', stage, topic, partition, offset)` of the failed record. */
  deadLetterId: string;
  /** Where the failed record was read (its original topic, partition and offset). */
  topic: string;
  partition: number;
  offset: string;
  stage: string;
  code: string;
  /** When the letter was re-sent. */
  replayedAt: number;
}
