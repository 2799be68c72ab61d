/**
 * Complete example events, one per schema. Typed object literals, so the compiler checks
 * them against schemas/types.ts, and the schema test checks them against the Avro schemas:
 * together they keep the two in sync.
 */
import type {
  BatchState,
  DeadLetter,
  DeadLetterReplay,
  Feedback,
  Judgement,
  PairTurn,
  Reward,
  Sample,
  SessionState,
  Trajectory,
  TrajectoryState,
  TrajectoryStep,
  Turn,
  TurnPair,
  WeightChunk,
  WeightVersion,
} from '../../schemas/index.ts';

export function exampleTurn(over: Partial<Turn> = {}): Turn {
  return {
    turnId: '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10',
    sessionId: 'session-1',
    sessionSource: 'HEADER',
    userId: 'alice',
    turnType: 'MAIN',
    sessionDone: false,
    requestedAt: 1_760_000_000_000,
    completedAt: 1_760_000_000_250,
    model: 'turnstream-tiny',
    policyModelId: 'turnstream-tiny',
    policyVersion: 0,
    requestMessages: [
      { role: 'system', content: 'Be brief.', name: null, toolCallId: null, toolCalls: [] },
      { role: 'user', content: 'Hello 👋', name: null, toolCallId: null, toolCalls: [] },
    ],
    toolsJson: null,
    response: { content: 'Hi there!', toolCalls: [], finishReason: 'stop' },
    promptTokenIds: [256, 1, 2, 3],
    responseTokenIds: [72, 105, 33],
    responseLogprobs: [-0.5, -0.25, -1],
    tokenized: true,
    exactLogprobs: true,
    promptTruncatedTokens: 0,
    promptHeadTokens: 0,
    sampling: {
      temperature: 0.7,
      topP: 1,
      maxTokens: 64,
      seed: null,
      stop: [],
      presencePenalty: null,
      frequencyPenalty: null,
      responseFormat: null,
    },
    usage: { promptTokens: 4, completionTokens: 3, totalTokens: 7 },
    latencyMs: 250,
    gatewayId: 'gw-1',
    nextMessages: [],
    actedBy: null,
    truncation: null,
    metadata: {},
    choiceIndex: 0,
    rawPrompt: false,
    ...over,
  };
}

export function exampleFeedback(over: Partial<Feedback> = {}): Feedback {
  return {
    feedbackId: 'fb-1',
    sessionId: 'session-1',
    turnId: '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10',
    userId: 'alice',
    rating: 1,
    text: 'great',
    createdAt: 1_760_000_001_000,
    actedBy: null,
    ...over,
  };
}

export function examplePairTurn(over: Partial<PairTurn> = {}): PairTurn {
  const t = exampleTurn();
  return {
    turnId: t.turnId,
    mainTurnIndex: 0,
    policyModelId: t.policyModelId,
    policyVersion: t.policyVersion,
    model: t.model,
    requestMessages: t.requestMessages,
    response: t.response,
    promptTokenIds: t.promptTokenIds,
    responseTokenIds: t.responseTokenIds,
    responseLogprobs: t.responseLogprobs,
    tokenized: t.tokenized,
    exactLogprobs: t.exactLogprobs,
    samplingTemperature: 1,
    samplingTopP: 1,
    promptHeadTokens: 0,
    toolsJson: t.toolsJson,
    requestedAt: t.requestedAt,
    completedAt: t.completedAt,
    nextMessages: [],
    metadata: {},
    ...over,
  };
}

export function examplePair(over: Partial<TurnPair> = {}): TurnPair {
  const turn = examplePairTurn();
  return {
    pairId: turn.turnId,
    sessionId: 'session-1',
    userId: 'alice',
    turn,
    nextState: [{ role: 'USER', content: 'thanks!', toolCallId: null }],
    endMarker: null,
    feedback: [{ feedbackId: 'fb-1', rating: 1, text: null, createdAt: 1_760_000_001_000 }],
    historyVerified: true,
    createdAt: 1_760_000_002_000,
    tag: null,
    ...over,
  };
}

export function exampleSessionState(over: Partial<SessionState> = {}): SessionState {
  return {
    sessionId: 'session-1',
    userId: 'alice',
    mainTurnCount: 1,
    pending: examplePairTurn(),
    pendingFeedback: [],
    recentIds: ['3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10'],
    lastActivityAt: 1_760_000_000_250,
    closed: false,
    closedReason: null,
    held: [],
    earlyFeedback: [],
    ...over,
  };
}

export function exampleJudgement(over: Partial<Judgement> = {}): Judgement {
  const pair = examplePair();
  return {
    judgementId: `${pair.pairId}:embedded`,
    turnId: pair.pairId,
    sessionId: pair.sessionId,
    userId: pair.userId,
    policyVersion: 0,
    judgeId: 'embedded',
    votes: [
      { index: 0, score: 1, hint: null, latencyMs: 3, error: null, attempts: 1 },
      { index: 1, score: null, hint: null, latencyMs: 5000, error: 'timeout', attempts: 3 },
    ],
    score: 1,
    hint: null,
    pair,
    createdAt: 1_760_000_003_000,
    tag: null,
    ...over,
  };
}

export function exampleSample(over: Partial<Sample> = {}): Sample {
  return {
    sampleId: '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10:COMBINED',
    turnId: '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10',
    sessionId: 'session-1',
    userId: 'alice',
    policyModelId: 'turnstream-tiny',
    policyVersion: 0,
    method: 'COMBINED',
    tokens: [256, 1, 2, 3, 72, 105, 33],
    promptLength: 4,
    responseLength: 3,
    lossMask: [1, 1, 1],
    rolloutLogprobs: [-0.5, -0.25, -1],
    exactLogprobs: true,
    samplingTemperature: 1,
    samplingTopP: 1,
    promptHeadTokens: 0,
    teacherPromptTokens: null,
    reward: 1,
    teacherLogprobs: [-0.25, -0.25, -0.5],
    teacherTopK: [{ ids: [72, 73], logprobs: [-0.25, -2] }],
    weight: 1,
    judgeId: 'embedded',
    createdAt: 1_760_000_004_000,
    tag: null,
    group: null,
    ...over,
  };
}

export function exampleWeightVersion(over: Partial<WeightVersion> = {}): WeightVersion {
  return {
    modelId: 'turnstream-tiny',
    version: 1,
    parentVersion: 0,
    uri: 'file:///tmp/weights/turnstream-tiny/v1',
    sha256: 'a'.repeat(64),
    format: 'turnstream-tfjs-v1',
    baseModel: 'turnstream-tiny',
    metrics: {
      loss: 0.5,
      meanReward: 0.25,
      kl: 0,
      clipFraction: 0.1,
      samples: 16,
      tokens: 480,
      logprobDrift: 0.01,
      droppedStale: 0,
      steps: 1,
      mismatchKl: 0,
      tisMean: 1,
      tisTruncated: 0,
      stepSeconds: 0,
    },
    createdAt: 1_760_000_005_000,
    ...over,
  };
}

export function exampleWeightChunk(over: Partial<WeightChunk> = {}): WeightChunk {
  const data = Buffer.from('GGUF piece');
  return {
    modelId: 'smollm2-135m',
    version: 3,
    index: 0,
    count: 2,
    file: 'adapter.gguf',
    fileOffset: 0,
    fileBytes: 20,
    fileSha256: 'b'.repeat(64),
    sha256: 'c'.repeat(64),
    data,
    createdAt: 1_760_000_005_000,
    ...over,
  };
}

export function exampleDeadLetter(over: Partial<DeadLetter> = {}): DeadLetter {
  return {
    topic: 'turnstream.turns.v1',
    partition: 0,
    offset: '42',
    key: Buffer.from('session-1'),
    value: Buffer.from([0, 1, 2]),
    code: 'TS_ERR_DECODE',
    message: 'unknown magic byte',
    stage: 'session-assembler',
    failedAt: 1_760_000_006_000,
    attempts: 1,
    ...over,
  };
}

export function exampleDeadLetterReplay(over: Partial<DeadLetterReplay> = {}): DeadLetterReplay {
  return {
    deadLetterId: '7c9e6679-7425-50de-944b-e07fc1f90ae7',
    topic: 'turnstream.pairs.v1',
    partition: 1,
    offset: '17',
    stage: 'judge',
    code: 'TS_ERR_JUDGE_FAILED',
    replayedAt: 1_760_000_007_000,
    ...over,
  };
}

export function exampleReward(over: Partial<Reward> = {}): Reward {
  return {
    rewardId: '6f1c2e0a-1d2b-5c3d-8e4f-0a1b2c3d4e5f',
    sessionId: 'gym-b0-upper-copy-r1',
    userId: null,
    source: 'verifier:command',
    reward: 1,
    passed: true,
    detail: 'exit 0',
    turnIds: ['3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10'],
    policyModelId: 'turnstream-tiny',
    policyVersion: 0,
    rollout: {
      suite: 'terminal',
      taskId: 'upper-copy',
      groupId: 'b0-upper-copy',
      batchId: 'run1-b0',
      index: 1,
      groupSize: 4,
      batchGroups: 2,
      split: 'TRAIN',
    },
    createdAt: 1_760_000_007_000,
    parts: { command: true },
    ...over,
  };
}

export function exampleTrajectoryStep(over: Partial<TrajectoryStep> = {}): TrajectoryStep {
  return {
    turnId: '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10',
    policyModelId: 'turnstream-tiny',
    policyVersion: 0,
    promptTokenIds: [256, 1, 2, 3],
    responseTokenIds: [72, 105, 33],
    responseLogprobs: [-0.5, -0.25, -1],
    exactLogprobs: true,
    samplingTemperature: 1,
    samplingTopP: 1,
    promptHeadTokens: 0,
    tokenized: true,
    completedAt: 1_760_000_000_250,
    ...over,
  };
}

export function exampleTrajectory(over: Partial<Trajectory> = {}): Trajectory {
  return {
    sessionId: 'gym-b0-upper-copy-r1',
    userId: null,
    reward: exampleReward(),
    steps: [exampleTrajectoryStep()],
    missingTurns: 0,
    createdAt: 1_760_000_008_000,
    tag: null,
    ...over,
  };
}

export function exampleTrajectoryState(over: Partial<TrajectoryState> = {}): TrajectoryState {
  return {
    sessionId: 'gym-b0-upper-copy-r1',
    userId: null,
    steps: [exampleTrajectoryStep()],
    reward: exampleReward(),
    rewardSeenAt: 1_760_000_007_500,
    done: false,
    updatedAt: 1_760_000_007_500,
    ...over,
  };
}

export function exampleBatchState(over: Partial<BatchState> = {}): BatchState {
  return {
    batchId: 'run1-b0',
    trajectories: [exampleTrajectory()],
    firstSeenAt: 1_760_000_008_000,
    done: false,
    updatedAt: 1_760_000_008_000,
    ...over,
  };
}
