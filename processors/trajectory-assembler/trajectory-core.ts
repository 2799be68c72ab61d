/**
 * Trajectories of gym rollouts, pure logic (the service is trajectory-assembler-service.ts):
 * the steps of a rollout are its main turns that carry rollout metadata (schemas/rollout-metadata.ts),
 * read from the turns topic; its outcome is the verifier's Reward, read from the rewards topic.
 * Both are keyed by session, so one instance sees all of a rollout. When the outcome and every turn
 * it lists are in, the trajectory goes out, keyed by its batch, for the group builder. An outcome
 * that lists no turns takes the session's steps read within `settleMs` of it; one whose listed
 * turns do not all come within `settleMs` goes out with what came, `missingTurns` saying how many
 * did not. EVAL rollouts score a version and are never trained: their outcome is not joined.
 */
import {
  isRolloutStep,
  samplingOf,
  type Reward,
  type Trajectory,
  type TrajectoryState,
  type TrajectoryStep,
  type Turn,
} from '../../schemas/index.ts';
import { TRAJECTORY_ASSEMBLER_DEFAULTS } from '../defaults.ts';

export interface TrajectoryAssemblerOptions {
  /** How long an outcome waits for the turns it lists (or, listing none, for the session's), ms. `TRAJECTORY_SETTLE_MS` @default DEFAULT_SETTLE_MS (30000) */
  settleMs?: number;
  /** A rollout's steps with no outcome are forgotten after this long without news, ms. @default 3600000 */
  abandonMs?: number;
  /** A finished rollout is remembered this long, so a late or repeated turn or outcome is ignored, ms. @default 600000 */
  retainDoneMs?: number;
}

export const DEFAULT_SETTLE_MS = TRAJECTORY_ASSEMBLER_DEFAULTS.settleMs;

export interface TrajectoryEvents {
  emitted?(t: Trajectory): void;
  ignored?(kind: 'turn' | 'reward', reason: string): void;
  abandoned?(sessionId: string): void;
}

/** The state store of one partition, as the runtime gives it. */
export interface TrajectoryStore {
  get(key: string): TrajectoryState | undefined;
  put(key: string, value: TrajectoryState): void;
  delete(key: string): void;
}

export type TrajectoryRecord = { topicId: 'turns'; value: Turn } | { topicId: 'rewards'; value: Reward };

/** What the learner needs of a turn. */
export function stepOf(turn: Turn): TrajectoryStep {
  return {
    turnId: turn.turnId,
    policyModelId: turn.policyModelId,
    policyVersion: turn.policyVersion,
    promptTokenIds: turn.promptTokenIds,
    responseTokenIds: turn.responseTokenIds,
    responseLogprobs: turn.responseLogprobs,
    exactLogprobs: turn.exactLogprobs,
    ...samplingOf(turn),
    tokenized: turn.tokenized,
    completedAt: turn.completedAt,
  };
}

const fresh = (sessionId: string, userId: string | null, now: number): TrajectoryState => ({
  sessionId,
  userId,
  steps: [],
  reward: null,
  rewardSeenAt: null,
  done: false,
  updatedAt: now,
});

export class TrajectoryCore {
  readonly settleMs: number;
  readonly abandonMs: number;
  readonly retainDoneMs: number;

  constructor(
    options: TrajectoryAssemblerOptions = {},
    private readonly events: TrajectoryEvents = {},
  ) {
    this.settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
    this.abandonMs = options.abandonMs ?? 3_600_000;
    this.retainDoneMs = options.retainDoneMs ?? 600_000;
  }

  /** Applies records in order; complete trajectories go to `emit`. */
  handle(records: readonly TrajectoryRecord[], store: TrajectoryStore, now: number, emit: (t: Trajectory) => void): void {
    for (const r of records) {
      if (r.topicId === 'turns') this.onTurn(r.value, store, now, emit);
      else this.onReward(r.value, store, now, emit);
    }
  }

  private onTurn(turn: Turn, store: TrajectoryStore, now: number, emit: (t: Trajectory) => void): void {
    if (turn.turnType !== 'MAIN' || !isRolloutStep(turn.metadata)) return;
    const st = store.get(turn.sessionId) ?? fresh(turn.sessionId, turn.userId, now);
    if (st.done) return this.events.ignored?.('turn', 'late');
    if (st.steps.some((s) => s.turnId === turn.turnId)) return this.events.ignored?.('turn', 'duplicate');
    st.steps.push(stepOf(turn));
    st.updatedAt = now;
    this.settle(st, store, now, emit, false);
  }

  private onReward(reward: Reward, store: TrajectoryStore, now: number, emit: (t: Trajectory) => void): void {
    if (!reward.rollout) return this.events.ignored?.('reward', 'not a rollout');
    if (reward.rollout.split !== 'TRAIN') return; // scores a version (dev, test); analytics read it from the rewards topic
    const st = store.get(reward.sessionId) ?? fresh(reward.sessionId, reward.userId, now);
    if (st.done || st.reward) return this.events.ignored?.('reward', st.done ? 'late' : 'duplicate');
    st.reward = reward;
    st.rewardSeenAt = now;
    st.updatedAt = now;
    this.settle(st, store, now, emit, false);
  }

  /** Emits the trajectory when it is complete (or, `force`, with what it has); else stores the state. */
  private settle(st: TrajectoryState, store: TrajectoryStore, now: number, emit: (t: Trajectory) => void, force: boolean): void {
    const reward = st.reward;
    const listed = reward?.turnIds ?? [];
    const have = new Map(st.steps.map((s) => [s.turnId, s]));
    const complete = reward !== null && listed.length > 0 && listed.every((id) => have.has(id));
    if (!reward || (!complete && !force)) {
      store.put(st.sessionId, st);
      return;
    }
    const steps =
      listed.length > 0
        ? listed.map((id) => have.get(id)).filter((s): s is TrajectoryStep => s !== undefined)
        : [...st.steps].sort((a, b) => a.completedAt - b.completedAt);
    const t: Trajectory = {
      sessionId: st.sessionId,
      userId: reward.userId ?? st.userId,
      reward,
      steps,
      missingTurns: listed.length > 0 ? listed.length - steps.length : 0,
      createdAt: now,
      tag: null,
    };
    emit(t);
    this.events.emitted?.(t);
    store.put(st.sessionId, { ...st, steps: [], done: true, updatedAt: now });
  }

  /** Lets go of outcomes that waited `settleMs`, forgets abandoned rollouts and old finished ones. */
  punctuate(
    store: TrajectoryStore & { entries(): IterableIterator<[string, TrajectoryState]> },
    now: number,
    emit: (t: Trajectory) => void,
  ): void {
    for (const [key, st] of [...store.entries()]) {
      if (st.done) {
        if (now - st.updatedAt >= this.retainDoneMs) store.delete(key);
      } else if (st.reward && st.rewardSeenAt !== null && now - st.rewardSeenAt >= this.settleMs) {
        this.settle(st, store, now, emit, true);
      } else if (!st.reward && now - st.updatedAt >= this.abandonMs) {
        store.delete(key);
        this.events.abandoned?.(key);
      }
    }
  }
}
