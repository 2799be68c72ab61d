/**
 * A synthetic but coherent event history for the sink's tests, benchmark and dashboard
 * demo: users talk in sessions, main turns become pairs, pairs are judged by three votes
 * (some failing, some disagreeing), judged pairs become samples, and the trainer publishes
 * versions whose answers are judged better and better, so the learning curve rises.
 * Deterministic for a seed.
 */
import type { Feedback, Judgement, Sample, Turn, TurnPair, Vote, WeightVersion } from '../schemas/index.ts';
import type { OutgoingEvent } from '../streams/index.ts';
import { mulberry32 } from '../core/index.ts';

export interface DatasetOptions {
  /** @default 4 */
  users?: number;
  /** @default 3 */
  sessionsPerUser?: number;
  /** Main turns per session (each followed by one side turn every third turn). @default 6 */
  turnsPerSession?: number;
  /** Policy versions published over the history. @default 4 */
  versions?: number;
  /** @default 1 */
  seed?: number;
  /** First turn's time. @default an hour ago */
  startMs?: number;
  /** Time between consecutive turns of the whole history. @default 2000 */
  stepMs?: number;
  /** Id prefix, so two datasets never share ids. @default 'd1' */
  idPrefix?: string;
}

export interface Dataset {
  events: OutgoingEvent[];
  /** How many events each topic gets. */
  counts: {
    turns: number;
    main: number;
    feedback: number;
    pairs: number;
    judgements: number;
    judged: number;
    samples: number;
    weights: number;
  };
}

const MODEL = 'turnstream-tiny';

/** The dataset being written: its events, their counts, and what later events depend on. */
interface History {
  readonly events: OutgoingEvent[];
  readonly counts: Dataset['counts'];
  readonly rand: () => number;
  /** Id prefix. */
  readonly px: string;
  readonly turnsPerSession: number;
  readonly versions: number;
  readonly totalMain: number;
  /** The majority score of each sample so far, for the next version's meanReward. */
  readonly rewards: number[];
}

/** One user's session, as the round-robin visits it. */
interface SessionRef {
  user: string;
  id: string;
  turn: number;
}

/**
 * A history of `users × sessionsPerUser` sessions of `turnsPerSession` main turns each, with
 * `versions` policy versions published along it. The same options give the same events.
 */
export function learningDataset(o: DatasetOptions = {}): Dataset {
  const users = o.users ?? 4;
  const sessionsPerUser = o.sessionsPerUser ?? 3;
  const turnsPerSession = o.turnsPerSession ?? 6;
  const versions = Math.max(1, o.versions ?? 4);
  const stepMs = o.stepMs ?? 2000;
  const px = o.idPrefix ?? 'd1';
  const totalMain = users * sessionsPerUser * turnsPerSession;
  const h: History = {
    events: [],
    counts: { turns: 0, main: 0, feedback: 0, pairs: 0, judgements: 0, judged: 0, samples: 0, weights: 0 },
    rand: mulberry32(o.seed ?? 1),
    px,
    turnsPerSession,
    versions,
    totalMain,
    rewards: [],
  };
  let clock = o.startMs ?? Date.now() - 3600_000;
  let mainSeen = 0;
  let published = 0;

  // Sessions interleave in time like real users: round-robin over all sessions.
  const sessions: SessionRef[] = Array.from({ length: users * sessionsPerUser }, (_, i) => ({
    user: `user-${i % users}`,
    id: `${px}-s${i}`,
    turn: 0,
  }));
  for (let t = 0; t < turnsPerSession; t++) {
    for (const s of sessions) {
      clock += stepMs;
      const version = Math.min(versions - 1, Math.floor((mainSeen / totalMain) * versions));
      // A new version is published when the history crosses into it.
      while (published < version) {
        published++;
        const recent = h.rewards.slice(-20);
        publish(h, published, clock - 1, recent.length ? recent.reduce((a, b) => a + b, 0) / recent.length : 0);
      }
      mainSeen++;
      writeTurn(h, s, t, version, clock);
    }
  }
  return { events: h.events, counts: h.counts };
}

function publish(h: History, version: number, at: number, meanReward: number): void {
  const w: WeightVersion = {
    modelId: MODEL,
    version,
    parentVersion: version - 1,
    uri: `file:///weights/${MODEL}/v${version}`,
    sha256: 'ab'.repeat(32),
    format: 'turnstream-tfjs-v1',
    baseModel: MODEL,
    metrics: {
      loss: 1 / (version + 1),
      meanReward,
      kl: 0.01 * version,
      clipFraction: 0.1,
      samples: Math.round(h.totalMain / h.versions),
      tokens: 1000,
      logprobDrift: 0.01,
      droppedStale: 0,
      steps: 4,
    },
    createdAt: at,
  };
  h.events.push({ id: 'weights', key: MODEL, value: w });
  h.counts.weights++;
}

/**
 * Main turn `t` of session `s` and what follows from it: a side turn every third turn, maybe
 * feedback, its pair, and (unless the judge lags) its judgement and sample. The random draws come
 * in a fixed order, so a seed gives one history.
 */
function writeTurn(h: History, s: SessionRef, t: number, version: number, clock: number): void {
  const { rand, px, events, counts } = h;
  const turnId = `${px}-turn-${s.id}-${t}`;
  const latency = 80 + Math.round(rand() * 300 + (rand() < 0.05 ? 2000 : 0));
  const turn = mainTurn(s, turnId, t === h.turnsPerSession - 1, t, version, clock, latency);
  events.push({ id: 'turns', key: s.id, value: turn });
  counts.turns++;
  counts.main++;
  if (t % 3 === 2) {
    events.push({
      id: 'turns',
      key: s.id,
      value: { ...turn, turnId: `${turnId}-side`, turnType: 'SIDE', sessionDone: false, latencyMs: Math.round(latency / 2) },
    });
    counts.turns++;
  }
  // Quality rises with the version: P(+1) from 0.3 to 0.8.
  const pGood = 0.3 + (0.5 * version) / Math.max(1, h.versions - 1);
  const truth = rand() < pGood ? 1 : rand() < 0.5 ? 0 : -1;
  let feedback: Feedback | undefined;
  if (rand() < 0.15) {
    feedback = {
      feedbackId: `${px}-fb-${s.id}-${t}`,
      sessionId: s.id,
      turnId,
      userId: s.user,
      rating: truth >= 0 ? 1 : -1,
      text: null,
      createdAt: clock + 500,
    };
    events.push({ id: 'feedback', key: s.id, value: feedback });
    counts.feedback++;
  }
  const pair = turnPair(s, turn, t, t === h.turnsPerSession - 1, feedback, clock);
  events.push({ id: 'pairs', key: s.id, value: pair });
  counts.pairs++;
  // Some pairs are not judged yet (the judge lags); the rest get three votes.
  if (rand() < 0.1) return;
  const judgement = judge(rand, s, pair, version, truth, clock);
  events.push({ id: 'judgements', key: turnId, value: judgement });
  counts.judgements++;
  counts.judged++;
  if (judgement.votes.every((v) => v.score === null)) return;
  h.rewards.push(judgement.score);
  events.push({ id: 'samples', key: s.id, value: rlSample(s, turnId, version, judgement.score, clock) });
  counts.samples++;
}

function mainTurn(s: SessionRef, turnId: string, last: boolean, t: number, version: number, clock: number, latency: number): Turn {
  return {
    turnId,
    sessionId: s.id,
    sessionSource: 'HEADER',
    userId: s.user,
    turnType: 'MAIN',
    sessionDone: last,
    requestedAt: clock - latency,
    completedAt: clock,
    model: MODEL,
    policyModelId: MODEL,
    policyVersion: version,
    requestMessages: [{ role: 'user', content: `question ${t}`, name: null, toolCallId: null, toolCalls: [] }],
    toolsJson: null,
    response: { content: `answer ${t}`, toolCalls: [], finishReason: 'stop' },
    promptTokenIds: [1, 2, 3],
    responseTokenIds: [4, 5],
    responseLogprobs: [-0.5, -0.7],
    tokenized: true,
    exactLogprobs: true,
    promptTruncatedTokens: 0,
    sampling: { temperature: 0.7, topP: 1, maxTokens: 64, seed: null, stop: [] },
    usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 },
    latencyMs: latency,
    gatewayId: 'gw-1',
  };
}

function turnPair(s: SessionRef, turn: Turn, t: number, last: boolean, feedback: Feedback | undefined, clock: number): TurnPair {
  return {
    pairId: turn.turnId,
    sessionId: s.id,
    userId: s.user,
    turn: {
      turnId: turn.turnId,
      mainTurnIndex: t,
      policyModelId: MODEL,
      policyVersion: turn.policyVersion,
      model: MODEL,
      requestMessages: turn.requestMessages,
      response: turn.response,
      promptTokenIds: turn.promptTokenIds,
      responseTokenIds: turn.responseTokenIds,
      responseLogprobs: turn.responseLogprobs,
      tokenized: true,
      exactLogprobs: true,
      toolsJson: null,
      requestedAt: turn.requestedAt,
      completedAt: turn.completedAt,
    },
    nextState: last ? [] : [{ role: 'USER', content: 'next', toolCallId: null }],
    endMarker: last ? 'SESSION_DONE' : null,
    feedback: feedback ? [{ feedbackId: feedback.feedbackId, rating: feedback.rating, text: null, createdAt: feedback.createdAt }] : [],
    historyVerified: true,
    createdAt: clock + 1000,
    tag: null,
  };
}

/** Three votes near the truth (some time out, some disagree) and their majority (0 when none is valid). */
function judge(rand: () => number, s: SessionRef, pair: TurnPair, version: number, truth: number, clock: number): Judgement {
  const turnId = pair.turn.turnId;
  const votes: Vote[] = [0, 1, 2].map((index) => {
    if (rand() < 0.07) return { index, score: null, hint: null, latencyMs: 5000, error: 'timeout', attempts: 3 };
    const score = rand() < 0.85 ? truth : [1, 0, -1][Math.floor(rand() * 3)];
    return { index, score, hint: null, latencyMs: 20 + Math.round(rand() * 200), error: null, attempts: 1 };
  });
  const valid = votes.map((v) => v.score).filter((v): v is number => v !== null);
  const tally = new Map<number, number>();
  for (const v of valid) tally.set(v, (tally.get(v) ?? 0) + 1);
  const majority = valid.length ? [...tally].sort((a, b) => b[1] - a[1] || b[0] - a[0])[0][0] : 0;
  return {
    judgementId: `${turnId}:embedded`,
    turnId,
    sessionId: s.id,
    userId: s.user,
    policyVersion: version,
    judgeId: 'embedded',
    votes,
    score: majority,
    hint: majority < 0 ? 'be more specific' : null,
    pair,
    createdAt: clock + 1500,
    tag: null,
  };
}

function rlSample(s: SessionRef, turnId: string, version: number, reward: number, clock: number): Sample {
  return {
    sampleId: `${turnId}:RL`,
    turnId,
    sessionId: s.id,
    userId: s.user,
    policyModelId: MODEL,
    policyVersion: version,
    method: 'RL',
    tokens: [1, 2, 3, 4, 5],
    promptLength: 3,
    responseLength: 2,
    lossMask: [1, 1],
    rolloutLogprobs: [-0.5, -0.7],
    exactLogprobs: true,
    teacherPromptTokens: null,
    reward,
    teacherLogprobs: null,
    teacherTopK: null,
    weight: 1,
    judgeId: 'embedded',
    createdAt: clock + 1800,
    tag: null,
  };
}
