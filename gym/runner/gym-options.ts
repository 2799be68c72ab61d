/**
 * What a `turnstream gym` run is: a task suite, the agent, how many GRPO steps of how many
 * rollouts, the held-out eval, and the model. Defaults follow the reference's recipe
 * (ClawGym-RL: 8 tasks × 8 samples, temperature 0.7, PPO clip 0.2/0.28, eval every 5 steps),
 * scaled to a CPU where its hour demands it (docs/gym.md says what was measured).
 */
import type { AnalyticsOptions } from '../../warehouse/index.ts';
import { resolveSettings, type StackSettings } from '../../stack/index.ts';
import type { AgentKind } from '../agent/rollout-types.ts';
import type { Task } from '../tasks/task.ts';
import type { TaskSampling } from './task-schedule.ts';

export interface GymRunOptions {
  /** The suite's tasks (gym/tasks/parse-task-suite.ts). */
  tasks: Task[];
  /** The suite's name (reports, rewards, sessions). */
  suite: string;
  /** Kafka bootstrap servers and the Confluent-compatible registry. */
  brokers: string[];
  registryUrl: string;
  /** The GGUF model served by llama.cpp and trained as LoRA versions. */
  model: { name: string; path: string; sha256: string };
  /**
   * The configuration the run's gateways, processors and learners are built from (stack/), as
   * `turnstream up`'s are (Kafka's and the registry's TLS and logins included); the run changes
   * what gym-learner.ts and gym-gateway.ts name. @default resolveSettings(): every default
   */
  stack?: StackSettings;
  /** Which agent plays. @default 'builtin' */
  agent?: AgentKind;
  /** Seeds 1..seeds, each from the base model. @default 3 */
  seeds?: number;
  /** Run only this seed of `seeds`. @default every seed */
  onlySeed?: number;
  /** GRPO steps (gradient steps) per seed. @default 30 */
  steps?: number;
  /** Tasks per rollout batch (B). @default 4 */
  tasksPerStep?: number;
  /** Rollouts per task (n). @default 8 */
  rolloutsPerTask?: number;
  /** Dev pass@1 every k steps (and before the first, and after the last). @default 5 */
  evalEvery?: number;
  /** Samples per dev task for pass@1. @default 4 */
  evalSamples?: number;
  /** Samples per test task for pass@1, measured before the first step and after the last only. @default 8 */
  testSamples?: number;
  /** Rollout temperature. @default 0.7 */
  temperature?: number;
  /**
   * Rollout top-p: 1, the whole distribution, as the reference samples; the trainer scores the
   * same nucleus either way (trainer/step/sampled-logits.ts). @default 1
   */
  topP?: number;
  /**
   * How a batch's train tasks are drawn (gym/runner/task-schedule.ts): `signal` favours tasks
   * likelier to give a group with a signal (chosen on dev: docs/gym.md, the runs that chose the
   * defaults). @default 'signal'
   */
  taskSampling?: TaskSampling;
  /**
   * What a rollout is trained on: `pass`, 1 when the whole verdict passed, else 0; `partial`, the
   * verdict's score (the share of its parts, and of a conjunction's checks, that held), which
   * gives a group a signal when its rollouts differ in any part. Pass@1 is reported either way.
   * @default 'pass'
   */
  reward?: GymReward;
  /** Cap of the truncated importance weights against the engine's log-probs; 0: off. @default 2 */
  tisCap?: number;
  /**
   * How a step averages its per-token loss: `token`, one mean over every trained token of the
   * batch (DAPO's per-token loss: a long rollout weighs by its length); `sample`, each rollout's
   * token mean, then the mean over rollouts (a short reply's tokens weigh more each: Dr. GRPO's
   * length bias). Chosen on dev: D3 against the rebalanced seed 1 (docs/gym.md).
   * @default 'token'
   */
  lossAggregation?: 'token' | 'sample';
  /** Skip the test split (a tuning run: dev only, so that test stays unseen until the reported run). @default false */
  devOnly?: boolean;
  /** Most tokens of one reply. @default 192 */
  maxTokens?: number;
  /** Learning rate of the LoRA adapter. @default GYM_LR */
  lr?: number;
  /** Weight of the KL penalty to the base model in each GRPO step (k3, per token). @default GYM_KL_COEF */
  klCoef?: number;
  /** The LoRA adapter on the model's last N layers only; 0: every layer. @default GYM_LORA_LAYERS */
  loraLayers?: number;
  /** Rollouts decoded side by side (llama.cpp sequences). @default min(8, rolloutsPerTask) */
  parallel?: number;
  /** llama.cpp threads. @default the gateway's (half the cores) */
  threads?: number;
  /** Divide advantages by the group's std (GRPO). @default true */
  normalizeStd?: boolean;
  /** Batches tried per seed before giving up on reaching `steps` (a batch whose groups are all-equal makes no step). @default 3 × steps */
  maxBatches?: number;
  /**
   * Consecutive batches without a step after which a seed stops early: a policy that fails (or
   * passes) every rollout of every group gives no more signal. @default 10
   */
  maxIdleBatches?: number;
  /** Longest wait for a version after a batch, ms. @default 600000 */
  stepTimeoutMs?: number;
  /** Share held out of a suite whose tasks name no split. @default 3/8 */
  heldOut?: number;
  /** System prompt of the served model. @default the catalog's */
  systemPrompt?: string;
  /** ClickHouse of the local stack: the run's turns, rewards and samples land there too. @default none */
  clickhouse?: Pick<AnalyticsOptions, 'url' | 'database' | 'username' | 'password' | 'tls'> & { url: string };
  /** Stops the run: rollouts and sandboxes end, services stop. */
  signal?: AbortSignal;
  onProgress?: (line: string) => void;
}

/**
 * The learning rate and KL weight of a gym run. At LORA_LR (2e-3) with no KL, answer-format rose
 * from 0.31 to 0.72 held-out pass@1 within 10 steps, then one seed of two collapsed (every rollout
 * failing from step 22). Hence half the rate and a pull towards the base model; docs/gym.md has
 * the runs at both settings.
 */
export const GYM_LR = 1e-3;

/** What a rollout is trained on (see `GymRunOptions.reward`). */
export type GymReward = 'pass' | 'partial';

/** A rollout's training reward under `reward`. */
export const trainingReward = (verdict: { reward: number; score: number }, reward: GymReward): number =>
  reward === 'partial' ? verdict.score : verdict.reward;
export const GYM_KL_COEF = 0.05;

/**
 * The layers a gym run adapts: the last 8 of SmolLM2-135M's 30. The backward pass then stops at
 * the first adapted layer, and a step trained 2–3 times faster for the same groups; chosen on dev
 * (D4 against D3, docs/gym.md "The defaults and the runs that chose them").
 */
export const GYM_LORA_LAYERS = 8;

/**
 * Rollout sampling where a run says nothing: the reference's temperature and top-p 1 (the whole
 * distribution: the trainer scores what was sampled), replies short enough for a CPU.
 */
export const GYM_SAMPLING: Readonly<{ temperature: number; topP: number; maxTokens: number }> = Object.freeze({
  temperature: 0.7,
  topP: 1,
  maxTokens: 192,
});

/** The defaults filled in. */
export type GymSettings = Required<Omit<GymRunOptions, 'onlySeed' | 'systemPrompt' | 'clickhouse' | 'signal' | 'onProgress' | 'threads'>> &
  Pick<GymRunOptions, 'onlySeed' | 'systemPrompt' | 'clickhouse' | 'signal' | 'onProgress' | 'threads'>;

export function gymSettings(o: GymRunOptions): GymSettings {
  const steps = o.steps ?? 30;
  const n = o.rolloutsPerTask ?? 8;
  return {
    ...o,
    stack: o.stack ?? resolveSettings(),
    agent: o.agent ?? 'builtin',
    seeds: o.seeds ?? 3,
    steps,
    tasksPerStep: o.tasksPerStep ?? 4,
    rolloutsPerTask: n,
    evalEvery: o.evalEvery ?? 5,
    evalSamples: o.evalSamples ?? 4,
    testSamples: o.testSamples ?? 8,
    temperature: o.temperature ?? GYM_SAMPLING.temperature,
    topP: o.topP ?? GYM_SAMPLING.topP,
    taskSampling: o.taskSampling ?? 'signal',
    reward: o.reward ?? 'pass',
    tisCap: o.tisCap ?? 2,
    lossAggregation: o.lossAggregation ?? 'token',
    devOnly: o.devOnly ?? false,
    maxTokens: o.maxTokens ?? GYM_SAMPLING.maxTokens,
    lr: o.lr ?? GYM_LR,
    klCoef: o.klCoef ?? GYM_KL_COEF,
    loraLayers: o.loraLayers ?? GYM_LORA_LAYERS,
    parallel: o.parallel ?? Math.min(8, n),
    normalizeStd: o.normalizeStd ?? true,
    maxBatches: o.maxBatches ?? 3 * steps,
    maxIdleBatches: o.maxIdleBatches ?? 10,
    stepTimeoutMs: o.stepTimeoutMs ?? 600_000,
    heldOut: o.heldOut ?? 3 / 8,
  };
}
