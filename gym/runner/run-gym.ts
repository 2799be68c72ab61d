/**
 * `turnstream gym`: agentic RL from tasks through the real pipeline (docs/gym.md). The run's
 * topics get a prefix of their own; the trajectory assembler and the group builder (and, with
 * ClickHouse, the sink) are shared by its seeds; each seed gets its own model lineage, gateway and
 * learner (gym/runner/run-seed.ts). Turns, rewards, trajectories and samples are events like any
 * other: replay and analytics see them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTfLlama, selectBackend } from '../../policy/index.ts';
import { createLogger, ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { analyticsOptions, inProcessPipeline, type InProcessPipeline } from '../../stack/index.ts';
import type { LearnerSettings } from '../../trainer/index.ts';
import { pairedPermutationTest } from '../../measure/index.ts';
import { prepareSandbox, sandboxLine } from '../sandbox/create-sandbox.ts';
import { splitTasks } from '../tasks/split-tasks.ts';
import { gymSettings, type GymRunOptions, type GymSettings } from './gym-options.ts';
import { runSeed, type SeedResult } from './run-seed.ts';
import { gymLearnerPlan, gymServed } from './gym-learner.ts';

/** Pass@1 of one split before the first step and after the last: the whole verdict and each part. */
export interface SplitFigures {
  /** Mean over seeds. */
  before: number;
  after: number;
  /** Each named part of the verdict (content, format, …), mean over seeds. */
  parts: Record<string, { before: number; after: number; p_value: number }>;
  per_task: Record<string, { before: number; after: number }>;
  /** Paired permutation test of after − before over (seed, task) pairs (exact when 2^n is small). */
  p_value: number;
  test: { n: number; meanDiff: number; exact: boolean };
  /** Mean pass@1 over seeds at each evaluated step. */
  curve: Array<{ step: number; passAt1: number; perSeed: number[] }>;
}

/** What `turnstream gym --json` prints. */
export interface GymResult {
  /** The run's topics are `<topicPrefix>turnstream.*` (its turns, rewards, trajectories, samples); its models `gym-<run>-s<seed>`. */
  topicPrefix: string;
  suite: string;
  agent: string;
  model: string;
  /** Mean test pass@1 over seeds, before the first step and after the last (the reported figure). */
  before: number;
  after: number;
  /** GRPO steps per seed (gradient steps taken; the fewest of the seeds). */
  steps: number;
  tasks: { train: string[]; dev: string[]; test: string[] };
  seeds: number;
  /** Rollouts per task (n) and tasks per batch (B). */
  n: number;
  batch: number;
  /** The test split in full (what `before`/`after` summarise), and the dev split beside it. */
  test_split: SplitFigures;
  dev_split: SplitFigures;
  /** Each seed's test and dev pass@1 before and after, and its parts on test. */
  per_seed: Array<{
    seed: number;
    test: { before: number; after: number };
    dev: { before: number; after: number };
    parts: Record<string, { before: number; after: number }>;
  }>;
  /** Paired permutation test of test after − before over (seed, test task) pairs. */
  p_value: number;
  test: { n: number; meanDiff: number; exact: boolean };
  wall_s: number;
  /** Where the time went (seconds, summed over seeds). */
  time: SeedResult['time'];
  /** Groups with a signal (trained) and all-equal (skipped), batches, steps the KL guard undid; per step in runs[].steps. */
  groups: { trained: number; allEqual: number; batches: number; rejectedSteps: number };
  /** The rollout/trainer mismatch over every step of every seed (per step in runs[].steps[].mismatch). */
  mismatch: { absLogprob: number; kl: number; truncated: number; tisMean: number; steps: number };
  runs: SeedResult[];
  settings: Pick<
    GymSettings,
    | 'steps'
    | 'temperature'
    | 'topP'
    | 'maxTokens'
    | 'lr'
    | 'klCoef'
    | 'loraLayers'
    | 'tisCap'
    | 'lossAggregation'
    | 'devOnly'
    | 'taskSampling'
    | 'reward'
    | 'evalEvery'
    | 'evalSamples'
    | 'testSamples'
    | 'parallel'
    | 'normalizeStd'
  >;
  /**
   * The learner the seeds trained: its settings (the configured learner's, `TRAIN_*` included) and
   * the overrides the gym applied to it, by name (gym-learner.ts).
   */
  learner?: { settings: LearnerSettings; overrides: Partial<LearnerSettings> };
  /** A report made by `gym --merge`: the runs it joined, each with its seeds, topics and own wall clock. */
  merged?: Array<{ source: string; topicPrefix: string; seeds: number[]; wall_s: number }>;
}

/** What a run's figures are of: the suite, model, agent, the step's shape and the settings; equal in every run a merge joins. */
export type RunIdentity = Pick<GymResult, 'suite' | 'agent' | 'model' | 'n' | 'batch' | 'settings'>;

export function runIdentity(s: GymSettings): RunIdentity {
  return {
    suite: s.suite,
    agent: s.agent,
    model: s.model.name,
    n: s.rolloutsPerTask,
    batch: s.tasksPerStep,
    settings: {
      steps: s.steps,
      temperature: s.temperature,
      topP: s.topP,
      maxTokens: s.maxTokens,
      lr: s.lr,
      klCoef: s.klCoef,
      loraLayers: s.loraLayers,
      tisCap: s.tisCap,
      lossAggregation: s.lossAggregation,
      devOnly: s.devOnly,
      taskSampling: s.taskSampling,
      reward: s.reward,
      evalEvery: s.evalEvery,
      evalSamples: s.evalSamples,
      testSamples: s.testSamples,
      parallel: s.parallel,
      normalizeStd: s.normalizeStd,
    },
  };
}

export async function runGym(options: GymRunOptions): Promise<GymResult> {
  const t0 = Date.now();
  const s = gymSettings(options);
  const { train, dev, test } = splitTasks(s.tasks, { heldOut: s.heldOut });
  if (train.length === 0 || (s.devOnly ? dev.length === 0 : test.length === 0))
    throw new Error(
      `the suite needs train and ${s.devOnly ? 'dev' : 'test'} tasks (has ${train.length} and ${s.devOnly ? dev.length : test.length})`,
    );
  const logger = createLogger('gym', 'warn');
  // the sandbox readied before anything starts: bubblewrap installed once here, not by each of the first rollouts
  s.onProgress?.(sandboxLine(await prepareSandbox()));
  const runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const naming = { prefix: `gym-${runId}.` };
  const weightsDir = await mkdtemp(join(tmpdir(), 'turnstream-gym-'));
  // The learner's backend first (native TensorFlow where it can be had): tensors belong to the backend they were made on.
  const backend = await selectBackend(undefined, { logger });
  s.onProgress?.(`gym: tfjs backend ${backend}`);
  // The base in tfjs, loaded once for every seed's learner.
  const baseTf = await loadTfLlama(s.model.path);
  let pipeline: InProcessPipeline | null = null;
  const runs: SeedResult[] = [];
  try {
    // The trajectory assembler and the group builder (and the sink) every seed shares, as `turnstream process` builds them.
    pipeline = await inProcessPipeline(s.stack, {
      naming,
      clientId: 'turnstream-gym',
      kafkaLogger: createLogger('kafka', 'error'),
      endpoints: { brokers: s.brokers, registryUrl: s.registryUrl },
      served: null,
      processors: ['trajectory-assembler', 'group-builder'],
      processorOverrides: {
        logger,
        // A batch waits for its trajectories as long as its step may take.
        group: { normalizeStd: s.normalizeStd, batchTimeoutMs: s.stepTimeoutMs },
      },
      // Into the shared analytics tables: the runs show up by model id beside everything else (the run's own topics, no replays).
      ...(s.clickhouse
        ? {
            sink: {
              analytics: { ...analyticsOptions(s.stack), ...s.clickhouse, database: s.clickhouse.database ?? s.stack.clickhouse.database },
              replayTags: [],
              // The sink's group of the run's topic family (`gym-<run>.turnstream-clickhouse-sink`), not the configured one.
              groupId: undefined,
              logger,
            },
          }
        : {}),
    });
    const { kafka, codecs } = pipeline.link;
    const seeds = s.onlySeed ? [s.onlySeed] : Array.from({ length: s.seeds }, (_, i) => i + 1);
    for (const seed of seeds) {
      if (s.signal?.aborted) break;
      runs.push(await runSeed({ settings: s, runId, kafka, codecs, naming, weightsDir, baseTf, train, dev, test, logger }, seed));
    }
  } finally {
    await pipeline?.stop();
    baseTf.model.dispose();
    await rm(weightsDir, { recursive: true, force: true });
  }
  if (runs.length === 0) throw new TurnstreamError(ErrorCodes.ABORTED, 'the gym run was stopped before its first seed ended');
  const ids = (ts: typeof train) => ts.map((t) => t.id);
  const summary = summarize(runs, runIdentity(s), { train: ids(train), dev: ids(dev), test: ids(test) }, (Date.now() - t0) / 1000);
  const plan = gymLearnerPlan(s.stack, gymServed(s, `gym-${runId}`), s);
  return { topicPrefix: naming.prefix, ...summary, learner: { settings: plan.settings, overrides: plan.overrides } };
}

const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** One split's figures over the seeds (see {@link SplitFigures}). */
export function splitFigures(runs: SeedResult[], split: 'dev' | 'test', tasks: string[]): SplitFigures {
  const evals = (r: SeedResult) => r.evals.filter((e) => e.split === split);
  const empty = { before: 0, after: 0, parts: {}, per_task: {}, p_value: 1, test: { n: 0, meanDiff: 0, exact: true }, curve: [] };
  if (tasks.length === 0 || runs.some((r) => evals(r).length === 0)) return empty;
  const first = (r: SeedResult) => evals(r)[0];
  const last = (r: SeedResult) => evals(r)[evals(r).length - 1];
  const steps = [...new Set(runs.flatMap((r) => evals(r).map((e) => e.step)))].sort((a, b) => a - b);
  const curve = steps.map((step) => {
    const perSeed = runs.map((r) => evals(r).find((e) => e.step === step)?.passAt1 ?? NaN).filter((x) => !Number.isNaN(x));
    return { step, passAt1: mean(perSeed), perSeed };
  });
  const paired = (of: (e: SeedResult['evals'][number], t: string) => number) =>
    pairedPermutationTest(
      runs.flatMap((r) => tasks.map((t) => of(first(r), t))),
      runs.flatMap((r) => tasks.map((t) => of(last(r), t))),
    );
  const all = paired((e, t) => e.perTask[t] ?? 0);
  const partNames = [...new Set(runs.flatMap((r) => Object.keys(first(r).parts)))];
  const parts = Object.fromEntries(
    partNames.map((p) => [
      p,
      {
        before: mean(runs.map((r) => first(r).parts[p] ?? 0)),
        after: mean(runs.map((r) => last(r).parts[p] ?? 0)),
        p_value: paired((e, t) => e.perTaskParts[t]?.[p] ?? 0).p,
      },
    ]),
  );
  return {
    before: mean(runs.map((r) => first(r).passAt1)),
    after: mean(runs.map((r) => last(r).passAt1)),
    parts,
    per_task: Object.fromEntries(
      tasks.map((t) => [
        t,
        { before: mean(runs.map((r) => first(r).perTask[t] ?? 0)), after: mean(runs.map((r) => last(r).perTask[t] ?? 0)) },
      ]),
    ),
    p_value: all.p,
    test: { n: all.n, meanDiff: all.meanDiff, exact: all.exact },
    curve,
  };
}

export function summarize(
  runs: SeedResult[],
  id: RunIdentity,
  tasks: { train: string[]; dev: string[]; test: string[] },
  wallS: number,
): Omit<GymResult, 'topicPrefix'> {
  const testSplit = splitFigures(runs, 'test', tasks.test);
  const devSplit = splitFigures(runs, 'dev', tasks.dev);
  const sum = (k: keyof SeedResult['time']) => runs.reduce((a, r) => a + r.time[k], 0);
  const edge = (r: SeedResult, split: 'dev' | 'test') => {
    const e = r.evals.filter((x) => x.split === split);
    return { first: e[0], last: e[e.length - 1] };
  };
  const mismatches = runs.flatMap((r) => r.steps.flatMap((x) => (x.mismatch ? [x.mismatch] : [])));
  return {
    suite: id.suite,
    agent: id.agent,
    model: id.model,
    before: testSplit.before,
    after: testSplit.after,
    steps: Math.min(...runs.map((r) => r.steps.filter((x) => x.step !== null).length)),
    tasks,
    seeds: runs.length,
    n: id.n,
    batch: id.batch,
    test_split: testSplit,
    dev_split: devSplit,
    per_seed: runs.map((r) => {
      const t = edge(r, 'test');
      const d = edge(r, 'dev');
      return {
        seed: r.seed,
        test: { before: t.first?.passAt1 ?? 0, after: t.last?.passAt1 ?? 0 },
        dev: { before: d.first?.passAt1 ?? 0, after: d.last?.passAt1 ?? 0 },
        parts: Object.fromEntries(
          Object.keys(t.first?.parts ?? {}).map((p) => [p, { before: t.first.parts[p], after: t.last.parts[p] ?? 0 }]),
        ),
      };
    }),
    p_value: testSplit.p_value,
    test: testSplit.test,
    wall_s: Number(wallS.toFixed(1)),
    time: { rollouts: sum('rollouts'), verifier: sum('verifier'), training: sum('training'), eval: sum('eval') },
    groups: {
      trained: runs.reduce((a, r) => a + r.steps.reduce((b, x) => b + x.groupsTrained, 0), 0),
      allEqual: runs.reduce((a, r) => a + r.steps.reduce((b, x) => b + x.groupsEqual, 0), 0),
      batches: runs.reduce((a, r) => a + r.batches, 0),
      rejectedSteps: runs.reduce((a, r) => a + r.rejectedSteps, 0),
    },
    mismatch: {
      absLogprob: mean(mismatches.map((m) => m.absLogprob)),
      kl: mean(mismatches.map((m) => m.kl)),
      truncated: mean(mismatches.map((m) => m.truncated)),
      tisMean: mismatches.length ? mean(mismatches.map((m) => m.tisMean)) : 1,
      steps: mismatches.length,
    },
    runs,
    settings: id.settings,
  };
}
