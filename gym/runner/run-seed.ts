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
import type { RolloutInfo } from '../../schemas/index.ts';
import { EventProducer, type EventCodecs } from '../../streams/index.ts';
import type { Logger } from '../../core/index.ts';
import { LORA_MAX_KL, LoraLineage, startLearner, type LearnerHandle } from '../../trainer/index.ts';
import type { LlamaConfig, TfLlamaModel } from '../../policy/index.ts';
import { runRollout } from '../agent/run-rollout.ts';
import type { RolloutResult } from '../agent/rollout-types.ts';
import type { Task } from '../tasks/task.ts';
import type { GymSettings } from './gym-options.ts';
import { startGymGateway } from './gym-gateway.ts';
import { rolloutReward } from './rollout-reward.ts';
import { seededRandom, TaskSchedule } from './task-schedule.ts';

/** Held-out pass@1 of one version. */
export interface EvalPoint {
  step: number;
  version: number;
  passAt1: number;
  perTask: Record<string, number>;
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
}

export interface SeedResult {
  seed: number;
  modelId: string;
  evals: EvalPoint[];
  steps: StepRecord[];
  batches: number;
  /** Set when the seed stopped early: after how many batches, the last `idleBatches` of them without a signal. */
  stalled?: { afterBatches: number; idleBatches: number };
  /**
   * Seconds spent, by phase: the train rollouts' wall time (their verifiers included), the
   * verifiers' own time summed over rollouts (they run side by side), the wait from a batch's
   * rewards to its version being served (the pipeline, the learner's step, the hot swap), and the
   * held-out evals.
   */
  time: { rollouts: number; verifier: number; training: number; eval: number };
  /** A few held-out replies before and after (for the report). */
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
  held: Task[];
  logger: Logger;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
  stop(): Promise<void>;
}

/** A gateway serving the seed's LoRA lineage (rollouts decoded side by side) and a learner training it. */
async function startSeedServices(ctx: SeedContext, modelId: string): Promise<SeedServices> {
  const s = ctx.settings;
  const gw = await startGymGateway({
    settings: s,
    modelId,
    weightsDir: ctx.weightsDir,
    logger: ctx.logger,
    kafka: { brokers: s.brokers, registryUrl: s.registryUrl, naming: ctx.naming, kafka: ctx.kafka },
  });
  const url = gw.url;
  const lineage = new LoraLineage({
    weightsDir: ctx.weightsDir,
    modelId,
    base: s.model,
    maxTrainTokens: 1024,
    baseTf: ctx.baseTf,
    logger: ctx.logger,
  });
  const learner = await startLearner({
    kafka: ctx.kafka,
    codecs: ctx.codecs,
    weightsDir: ctx.weightsDir,
    modelId,
    lineage,
    // A rollout batch is one step (the batcher takes it whole); it comes in one transaction.
    batch: { batchSize: 1, maxWaitMs: s.stepTimeoutMs, maxUserShare: 1, maxStaleness: 1000 },
    optimizer: { lr: s.lr },
    step: { maxKl: LORA_MAX_KL, mismatchTis: true },
    grpoStep: { klCoef: s.klCoef },
    consensus: false,
    logger: ctx.logger,
  });
  await learner.ready;
  const producer = new EventProducer(ctx.kafka, ctx.codecs);
  await producer.connect();
  return {
    modelId,
    url,
    learner,
    producer,
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
  split: 'TRAIN' | 'EVAL',
): RolloutInfo {
  return { suite: s.suite, taskId: task.id, groupId: `${batchId}-${task.id}`, batchId, index, groupSize, batchGroups, split };
}

/** One seed's run: the services, its rollouts and evals, its record. */
class SeedRun {
  readonly result: SeedResult;
  private readonly sampleSeed: () => number;

  constructor(
    private readonly ctx: SeedContext,
    private readonly svc: SeedServices,
    seed: number,
  ) {
    this.result = {
      seed,
      modelId: svc.modelId,
      evals: [],
      steps: [],
      batches: 0,
      time: { rollouts: 0, verifier: 0, training: 0, eval: 0 },
      replies: { before: [], after: [] },
    };
    const rand = seededRandom(seed);
    this.sampleSeed = () => Math.floor(rand() * 2 ** 31);
  }

  private get s(): GymSettings {
    return this.ctx.settings;
  }

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
              sampling: { temperature: s.temperature, maxTokens: s.maxTokens, seed: this.sampleSeed() },
              agent: s.agent,
              turnType,
              signal: s.signal,
            }),
      ),
      s.parallel,
    );
    const served = { userId: null, policyModelId: this.svc.modelId };
    await this.svc.producer.sendAll(
      results.map((r, i) => ({ id: 'rewards' as const, key: r.sessionId, value: rolloutReward(r, jobs[i].info, served) })),
    );
    return results;
  }

  /** Held-out pass@1 of the version now served: every held-out task, `evalSamples` times, as side turns. */
  async evaluate(step: number, version: number): Promise<void> {
    const t0 = Date.now();
    const { held } = this.ctx;
    const batchId = `${this.svc.modelId}-eval${step}`;
    const jobs = held.flatMap((task) =>
      Array.from({ length: this.s.evalSamples }, (_, i) => ({
        task,
        info: rolloutInfo(this.s, batchId, task, i, this.s.evalSamples, held.length, 'EVAL'),
      })),
    );
    const results = await this.rollouts(jobs, 'side');
    const perTask: Record<string, number> = {};
    for (const task of held) {
      const mine = results.filter((r) => r.taskId === task.id);
      perTask[task.id] = mine.filter((r) => r.verdict.passed).length / mine.length;
    }
    const passAt1 = results.filter((r) => r.verdict.passed).length / Math.max(1, results.length);
    this.result.evals.push({ step, version, passAt1, perTask });
    const replies = results.map((r) => ({ task: r.taskId, passed: r.verdict.passed, answer: r.finalAnswer }));
    if (step === 0) this.result.replies.before = replies;
    else this.result.replies.after = replies;
    this.result.time.eval += (Date.now() - t0) / 1000;
    this.say(`step ${step}, v${version}: held-out pass@1 ${passAt1.toFixed(2)}`);
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
    const results = await this.rollouts(jobs, 'main');
    const published = Date.now();
    const rolloutSeconds = (published - r0) / 1000;
    this.result.time.rollouts += rolloutSeconds;
    this.result.time.verifier += results.reduce((a, r) => a + r.timings.verifyMs, 0) / 1000;
    // The same rule the group builder applies: a batch whose groups are all-equal makes no step.
    const signal = tasks.map((t) => groupAdvantages(results.filter((r) => r.taskId === t.id).map((r) => r.verdict.reward)) !== null);
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
    };
    if (record.groupsTrained > 0) {
      record.madeVersion = await this.nextVersion(version);
      record.step = steps + 1;
      record.trainSeconds = (Date.now() - published) / 1000;
      this.result.time.training += record.trainSeconds;
    }
    this.result.steps.push(record);
    this.result.batches++;
    const made = record.step ? ` → step ${record.step}, v${record.madeVersion} (${record.trainSeconds.toFixed(0)} s)` : ': no step';
    const rssGb = (process.memoryUsage().rss / 2 ** 30).toFixed(2);
    this.say(
      `batch ${b} (${record.tasks.join(', ')}): train pass ${record.trainPass.toFixed(2)}, ${record.groupsTrained} groups with signal, ${record.groupsEqual} all-equal${made}; RSS ${rssGb} GiB`,
    );
    return record;
  }

  /** The seed stops early: `idle` batches in a row gave no group with a signal. */
  stalled(idle: number, trainPass: number): void {
    this.result.stalled = { afterBatches: this.result.batches, idleBatches: idle };
    this.say(`${idle} batches in a row without a signal (train pass ${trainPass.toFixed(2)} in the last): the seed stops here`);
  }

  /** Waits until the learner has published past `version` and the gateway serves it. */
  private async nextVersion(version: number): Promise<number> {
    const { learner, url, modelId } = this.svc;
    const deadline = Date.now() + this.s.stepTimeoutMs;
    while (learner.stats().version <= version && Date.now() < deadline) {
      if (this.s.signal?.aborted) throw new Error('aborted');
      await sleep(200);
    }
    const want = learner.stats().version;
    if (want <= version)
      throw new Error(`no version after v${version} within ${this.s.stepTimeoutMs} ms (${JSON.stringify(learner.stats())})`);
    while (Date.now() < deadline) {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-turn-type': 'side', 'x-session-id': `${modelId}-probe` },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
      });
      await res.text();
      if (Number(res.headers.get('x-policy-version') ?? -1) >= want) return want;
      await sleep(200);
    }
    throw new Error(`the gateway did not serve v${want} within ${this.s.stepTimeoutMs} ms`);
  }
}

export async function runSeed(ctx: SeedContext, seed: number): Promise<SeedResult> {
  const s = ctx.settings;
  const svc = await startSeedServices(ctx, `gym-${ctx.runId}-s${seed}`);
  const run = new SeedRun(ctx, svc, seed);
  try {
    let version = svc.learner.stats().version;
    await run.evaluate(0, version);
    const schedule = new TaskSchedule(ctx.train, seed);
    let steps = 0;
    let idle = 0;
    for (let b = 0; steps < s.steps && b < s.maxBatches && !s.signal?.aborted; b++) {
      const record = await run.batch(b, schedule.next(Math.min(s.tasksPerStep, ctx.train.length)), version, steps);
      if (record.step === null || record.madeVersion === null) {
        if (++idle < s.maxIdleBatches) continue;
        run.stalled(idle, record.trainPass);
        break;
      }
      idle = 0;
      steps = record.step;
      version = record.madeVersion;
      if (steps % s.evalEvery === 0 || steps === s.steps) await run.evaluate(steps, version);
    }
    const evals = run.result.evals;
    if (evals[evals.length - 1].step !== steps) await run.evaluate(steps, version);
    return run.result;
  } finally {
    await svc.stop();
  }
}
