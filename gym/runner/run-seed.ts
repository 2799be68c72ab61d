/**
 * One seed of a gym run, from the base model: a gateway serving this seed's LoRA lineage and a
 * learner training it, against the run's shared processors. Each step: B train tasks × n
 * rollouts through the gateway (side by side), each verdict on Kafka as a Reward; the pipeline
 * turns the batch into group-relative samples, the learner takes one step and publishes a
 * version, and the gateway swaps it in before the next batch (each batch on the newest version).
 * Held-out pass@1 before the first step, every `evalEvery` steps and after the last.
 */
import type { Kafka } from 'kafkajs';
import { groupAdvantages } from '../../processors/index.ts';
import type { RolloutInfo, RolloutSplit, WeightVersion } from '../../schemas/index.ts';
import { EventProducer, type EventCodecs } from '../../streams/index.ts';
import type { Logger } from '../../core/index.ts';
import type { LearnerHandle } from '../../trainer/index.ts';
import { awaitServedVersion, gatewayVersionProbe, learnerService } from '../../stack/index.ts';
import type { LlamaConfig, TfLlamaModel } from '../../policy/index.ts';
import { runRollout } from '../agent/run-rollout.ts';
import type { RolloutResult } from '../agent/rollout-types.ts';
import type { Task } from '../tasks/task.ts';
import { trainingReward, type GymSettings } from './gym-options.ts';
import { startGymGateway } from './gym-gateway.ts';
import { gymLearnerOverrides, gymServed } from './gym-learner.ts';
import { mismatchWarning } from './mismatch-warning.ts';
import { rolloutReward } from './rollout-reward.ts';
import { seededRandom, TaskSchedule } from './task-schedule.ts';

/** Held-out pass@1 of one version on one split. */
export interface EvalPoint {
  step: number;
  version: number;
  /** `dev` (every few steps) or `test` (before the first step and after the last). */
  split: 'dev' | 'test';
  passAt1: number;
  perTask: Record<string, number>;
  /** Pass rate of each named part of the verdict (content, format, …), over the same rollouts. */
  parts: Record<string, number>;
  /** Each task's pass rate per part. */
  perTaskParts: Record<string, Record<string, number>>;
}

/** The rollout/trainer mismatch of one step, from the version it published. */
export interface StepMismatch {
  /** Mean |engine − trainer| log-prob of the sampled tokens. */
  absLogprob: number;
  /** k3 KL(π_rollout ‖ π_trainer). */
  kl: number;
  /** Share of tokens whose importance weight hit the cap. */
  truncated: number;
  /** Mean truncated importance weight. */
  tisMean: number;
}

/** One GRPO step (a rollout batch that made a version), or a batch that made none. */
export interface StepRecord {
  batch: number;
  step: number | null;
  /** The version the batch's rollouts ran on. */
  version: number;
  /** The version its step made (served before the next batch), or null. */
  madeVersion: number | null;
  tasks: string[];
  /** Share of the batch's rollouts that passed. */
  trainPass: number;
  /** Groups with a signal, and those all-equal. */
  groupsTrained: number;
  groupsEqual: number;
  rolloutSeconds: number;
  trainSeconds: number;
  /** Mean words of the batch's final answers (a length bias shows here first). */
  replyWords?: number;
  /** Mean model calls of the batch's rollouts (a multi-turn task that takes more turns shows here). */
  calls?: number;
  /** The learner's step was undone by its KL guard: the batch was consumed, no version made. */
  rejected?: boolean;
  /** The step's rollout/trainer mismatch (null when it made no version). */
  mismatch?: StepMismatch | null;
}

export interface SeedResult {
  seed: number;
  modelId: string;
  evals: EvalPoint[];
  steps: StepRecord[];
  batches: number;
  /** Set when the seed stopped early: after how many batches, the last `idleBatches` of them without a signal. */
  stalled?: { afterBatches: number; idleBatches: number };
  /** Steps the learner's KL guard undid (each a step not taken; the run went on). */
  rejectedSteps: number;
  /**
   * Seconds spent, by phase: the train rollouts' wall time (their verifiers included), the
   * verifiers' own time summed over rollouts (they run side by side), the wait from a batch's
   * rewards to its version being served (the pipeline, the learner's step, the hot swap), and the
   * held-out evals.
   */
  time: { rollouts: number; verifier: number; training: number; eval: number };
  /** The reported split's replies (test's; dev's in a `--dev-only` run) before and after (for the report). */
  replies: {
    before: Array<{ task: string; passed: boolean; answer: string | null }>;
    after: Array<{ task: string; passed: boolean; answer: string | null }>;
  };
}

export interface SeedContext {
  settings: GymSettings;
  runId: string;
  kafka: Kafka;
  codecs: EventCodecs;
  naming: { prefix: string };
  weightsDir: string;
  baseTf: { model: TfLlamaModel; config: LlamaConfig; architecture: string };
  train: Task[];
  dev: Task[];
  test: Task[];
  logger: Logger;
}

/** Runs `jobs` with at most `limit` at a time, in order of start. */
async function pooled<T>(jobs: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const out = new Array<T>(jobs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
  return out;
}

/** What one seed runs on: its gateway, its learner, and a producer of its rewards. */
interface SeedServices {
  modelId: string;
  url: string;
  learner: LearnerHandle;
  producer: EventProducer;
  /** Each published version's mismatch figures. */
  mismatches: Map<number, StepMismatch>;
  stop(): Promise<void>;
}

const mismatchOf = (wv: WeightVersion): StepMismatch => ({
  absLogprob: wv.metrics.logprobDrift,
  kl: wv.metrics.mismatchKl ?? 0,
  truncated: wv.metrics.tisTruncated ?? 0,
  tisMean: wv.metrics.tisMean ?? 1,
});

/** A gateway serving the seed's LoRA lineage (rollouts decoded side by side) and a learner training it. */
async function startSeedServices(ctx: SeedContext, modelId: string): Promise<SeedServices> {
  const s = ctx.settings;
  const gw = await startGymGateway({
    stack: s.stack,
    settings: s,
    modelId,
    weightsDir: ctx.weightsDir,
    logger: ctx.logger,
    kafka: { brokers: s.brokers, registryUrl: s.registryUrl, naming: ctx.naming, kafka: ctx.kafka },
  });
  const url = gw.url;
  const mismatches = new Map<number, StepMismatch>();
  // The configured learner (`up`'s) with the gym's named overrides (gym-learner.ts).
  const { handle: learner } = await learnerService(
    s.stack,
    gymServed(s, modelId),
    { kafka: ctx.kafka, codecs: ctx.codecs },
    {
      settings: gymLearnerOverrides(s),
      weightsDir: ctx.weightsDir,
      baseTf: ctx.baseTf,
      logger: ctx.logger,
      onVersion: (wv) => mismatches.set(wv.version, mismatchOf(wv)),
    },
  );
  const producer = new EventProducer(ctx.kafka, ctx.codecs);
  await producer.connect();
  return {
    modelId,
    url,
    learner,
    producer,
    mismatches,
    stop: async () => {
      await producer.disconnect().catch(() => undefined);
      await learner.stop().catch(() => undefined);
      await gw.stop();
    },
  };
}

/** Where one rollout of a batch belongs. */
function rolloutInfo(
  s: GymSettings,
  batchId: string,
  task: Task,
  index: number,
  groupSize: number,
  batchGroups: number,
  split: RolloutSplit,
): RolloutInfo {
  return { suite: s.suite, taskId: task.id, groupId: `${batchId}-${task.id}`, batchId, index, groupSize, batchGroups, split };
}

/** One seed's run: the services, its rollouts and evals, its record. */
class SeedRun {
  readonly result: SeedResult;
  private readonly sampleSeed: () => number;

  readonly schedule: TaskSchedule;

  constructor(
    private readonly ctx: SeedContext,
    private readonly svc: SeedServices,
    seed: number,
  ) {
    const s = ctx.settings;
    this.schedule = new TaskSchedule(ctx.train, seed, { sampling: s.taskSampling, n: s.rolloutsPerTask });
    this.result = {
      seed,
      modelId: svc.modelId,
      evals: [],
      steps: [],
      batches: 0,
      time: { rollouts: 0, verifier: 0, training: 0, eval: 0 },
      replies: { before: [], after: [] },
      rejectedSteps: 0,
    };
    const rand = seededRandom(seed);
    this.sampleSeed = () => Math.floor(rand() * 2 ** 31);
  }

  private get s(): GymSettings {
    return this.ctx.settings;
  }

  /** The mismatch warning was given (once a seed). */
  private warnedMismatch = false;

  private say(line: string): void {
    this.s.onProgress?.(`gym ${this.svc.modelId}: ${line}`);
  }

  /** The rollouts of `infos` (task by task), `parallel` at a time; their verdicts go on Kafka as rewards. */
  private async rollouts(jobs: Array<{ task: Task; info: RolloutInfo }>, turnType: 'main' | 'side'): Promise<RolloutResult[]> {
    const s = this.s;
    const results = await pooled(
      jobs.map(
        ({ task, info }) =>
          () =>
            runRollout(task, {
              baseURL: this.svc.url,
              model: s.model.name,
              sessionId: `${info.groupId}-r${info.index}`,
              metadata: { gym_task: task.id, gym_group: info.groupId, gym_rollout: String(info.index) },
              sampling: { temperature: s.temperature, topP: s.topP, maxTokens: s.maxTokens, seed: this.sampleSeed() },
              agent: s.agent,
              turnType,
              signal: s.signal,
            }),
      ),
      s.parallel,
    );
    const served = { userId: null, policyModelId: this.svc.modelId };
    await this.svc.producer.sendAll(
      results.map((r, i) => ({
        id: 'rewards' as const,
        key: r.sessionId,
        value: rolloutReward(r, jobs[i].info, served, Date.now(), s.reward),
      })),
    );
    return results;
  }

  /** Held-out pass@1 of the version now served on one split (its tasks, each so many times, as side turns). */
  async evaluate(step: number, version: number, split: 'dev' | 'test'): Promise<void> {
    const t0 = Date.now();
    const held = split === 'dev' ? this.ctx.dev : this.ctx.test;
    if (held.length === 0 || (split === 'test' && this.s.devOnly)) return;
    const samples = split === 'dev' ? this.s.evalSamples : this.s.testSamples;
    const batchId = `${this.svc.modelId}-${split}${step}`;
    const jobs = held.flatMap((task) =>
      Array.from({ length: samples }, (_, i) => ({
        task,
        info: rolloutInfo(this.s, batchId, task, i, samples, held.length, split === 'dev' ? 'DEV' : 'TEST'),
      })),
    );
    const results = await this.rollouts(jobs, 'side');
    const rate = (rs: RolloutResult[], pass: (r: RolloutResult) => boolean) => rs.filter(pass).length / Math.max(1, rs.length);
    const partNames = [...new Set(results.flatMap((r) => Object.keys(r.verdict.parts)))];
    const perTask: Record<string, number> = {};
    const perTaskParts: Record<string, Record<string, number>> = {};
    for (const task of held) {
      const mine = results.filter((r) => r.taskId === task.id);
      perTask[task.id] = rate(mine, (r) => r.verdict.passed);
      perTaskParts[task.id] = Object.fromEntries(partNames.map((p) => [p, rate(mine, (r) => r.verdict.parts[p] === true)]));
    }
    const passAt1 = rate(results, (r) => r.verdict.passed);
    const parts = Object.fromEntries(partNames.map((p) => [p, rate(results, (r) => r.verdict.parts[p] === true)]));
    this.result.evals.push({ step, version, split, passAt1, perTask, parts, perTaskParts });
    // The reported split's replies: test's, or dev's in a tuning run (read them when tuning).
    if (split === (this.s.devOnly ? 'dev' : 'test')) {
      const replies = results.map((r) => ({ task: r.taskId, passed: r.verdict.passed, answer: r.finalAnswer }));
      if (step === 0) this.result.replies.before = replies;
      else this.result.replies.after = replies;
    }
    this.result.time.eval += (Date.now() - t0) / 1000;
    const partLine = partNames.length > 1 ? ` (${partNames.map((p) => `${p} ${parts[p].toFixed(2)}`).join(', ')})` : '';
    this.say(`step ${step}, v${version}: ${split} pass@1 ${passAt1.toFixed(2)}${partLine}`);
  }

  /** One rollout batch on `version`; a step when a group has a signal (then the version it made is served). */
  async batch(b: number, tasks: Task[], version: number, steps: number): Promise<StepRecord> {
    const s = this.s;
    const batchId = `${this.svc.modelId}-b${b}`;
    const jobs = tasks.flatMap((task) =>
      Array.from({ length: s.rolloutsPerTask }, (_, i) => ({
        task,
        info: rolloutInfo(s, batchId, task, i, s.rolloutsPerTask, tasks.length, 'TRAIN'),
      })),
    );
    const r0 = Date.now();
    const batchesBefore = this.svc.learner.stats().batches;
    const results = await this.rollouts(jobs, 'main');
    const published = Date.now();
    const rolloutSeconds = (published - r0) / 1000;
    this.result.time.rollouts += rolloutSeconds;
    this.result.time.verifier += results.reduce((a, r) => a + r.timings.verifyMs, 0) / 1000;
    // The same rule the group builder applies: a batch whose groups are all-equal makes no step.
    const signal = tasks.map(
      (t) => groupAdvantages(results.filter((r) => r.taskId === t.id).map((r) => trainingReward(r.verdict, s.reward))) !== null,
    );
    for (const t of tasks) {
      const mine = results.filter((r) => r.taskId === t.id);
      this.schedule.observe(t.id, mine.filter((r) => r.verdict.passed).length, mine.length);
    }
    const record: StepRecord = {
      batch: b,
      step: null,
      version,
      madeVersion: null,
      tasks: tasks.map((t) => t.id),
      trainPass: results.filter((r) => r.verdict.passed).length / results.length,
      groupsTrained: signal.filter(Boolean).length,
      groupsEqual: signal.filter((x) => !x).length,
      rolloutSeconds,
      trainSeconds: 0,
      replyWords: meanWords(results.map((r) => r.finalAnswer)),
      calls: results.reduce((n, r) => n + r.steps, 0) / results.length,
    };
    if (record.groupsTrained > 0) {
      const made = await this.nextVersion(version, batchesBefore);
      record.trainSeconds = (Date.now() - published) / 1000;
      this.result.time.training += record.trainSeconds;
      if (made === null) {
        record.rejected = true;
        this.result.rejectedSteps++;
      } else {
        record.madeVersion = made;
        record.step = steps + 1;
        record.mismatch = this.svc.mismatches.get(made) ?? null;
      }
    }
    this.result.steps.push(record);
    this.result.batches++;
    const mm = record.mismatch
      ? `; mismatch |Δlog p| ${record.mismatch.absLogprob.toFixed(3)}, k3 ${record.mismatch.kl.toFixed(4)}, truncated ${(100 * record.mismatch.truncated).toFixed(1)}%`
      : '';
    const made = record.step
      ? ` → step ${record.step}, v${record.madeVersion} (${record.trainSeconds.toFixed(0)} s${mm})`
      : record.rejected
        ? ': the learner’s KL guard undid the step (no version; the run goes on)'
        : ': no step';
    const rssGb = (process.memoryUsage().rss / 2 ** 30).toFixed(2);
    this.say(
      `batch ${b} (${record.tasks.join(', ')}): train pass ${record.trainPass.toFixed(2)}, ${record.groupsTrained} groups with signal, ${record.groupsEqual} all-equal${made}; replies ${record.replyWords!.toFixed(0)} words, ${record.calls!.toFixed(1)} calls; RSS ${rssGb} GiB`,
    );
    const warning = this.warnedMismatch ? null : mismatchWarning(record.mismatch);
    if (warning) {
      this.warnedMismatch = true;
      this.say(`warning: ${warning}`);
    }
    return record;
  }

  /** The seed stops early: `idle` batches in a row gave no group with a signal. */
  stalled(idle: number, trainPass: number): void {
    this.result.stalled = { afterBatches: this.result.batches, idleBatches: idle };
    this.say(`${idle} batches in a row without a signal (train pass ${trainPass.toFixed(2)} in the last): the seed stops here`);
  }

  /**
   * Waits until the learner has taken the batch (its batch count passes `batchesBefore`) and, when
   * that published past `version`, until the gateway serves it (stack/served-version.ts). Null: the
   * KL guard undid the step, a step not taken (counted in the learner's stats), and the same
   * version goes on serving.
   */
  private async nextVersion(version: number, batchesBefore: number): Promise<number | null> {
    const { learner, url, modelId } = this.svc;
    const r = await awaitServedVersion({
      learner,
      after: version,
      batchesBefore,
      probe: gatewayVersionProbe(url, `${modelId}-probe`),
      timeoutMs: this.s.stepTimeoutMs,
      signal: this.s.signal,
      pollMs: 200,
    });
    if (r.undone) return null;
    if (r.published <= version)
      throw new Error(`no version after v${version} within ${this.s.stepTimeoutMs} ms (${JSON.stringify(learner.stats())})`);
    if (!r.ok) throw new Error(`the gateway did not serve v${r.published} within ${this.s.stepTimeoutMs} ms`);
    return r.published;
  }
}

export async function runSeed(ctx: SeedContext, seed: number): Promise<SeedResult> {
  const s = ctx.settings;
  const svc = await startSeedServices(ctx, `gym-${ctx.runId}-s${seed}`);
  const run = new SeedRun(ctx, svc, seed);
  try {
    let version = svc.learner.stats().version;
    await run.evaluate(0, version, 'test');
    await run.evaluate(0, version, 'dev');
    let steps = 0;
    let idle = 0;
    for (let b = 0; steps < s.steps && b < s.maxBatches && !s.signal?.aborted; b++) {
      const record = await run.batch(b, run.schedule.next(Math.min(s.tasksPerStep, ctx.train.length)), version, steps);
      if (record.step === null || record.madeVersion === null) {
        // A step the KL guard undid had a signal: the run goes on, and does not count it as idle.
        if (record.rejected) continue;
        if (++idle < s.maxIdleBatches) continue;
        run.stalled(idle, record.trainPass);
        break;
      }
      idle = 0;
      steps = record.step;
      version = record.madeVersion;
      if (steps % s.evalEvery === 0 && steps !== s.steps) await run.evaluate(steps, version, 'dev');
    }
    const lastDev = run.result.evals.filter((e) => e.split === 'dev').at(-1);
    if (lastDev?.step !== steps) await run.evaluate(steps, version, 'dev');
    await run.evaluate(steps, version, 'test');
    return run.result;
  } finally {
    await svc.stop();
  }
}

/** Mean words of `answers` (a rollout with no final answer counts 0). */
export function meanWords(answers: ReadonlyArray<string | null>): number {
  if (answers.length === 0) return 0;
  return answers.reduce((n, a) => n + (a?.split(/\s+/).filter(Boolean).length ?? 0), 0) / answers.length;
}
