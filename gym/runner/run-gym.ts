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
import { startClickhouseSink, startGroupBuilder, startTrajectoryAssembler, type ClickhouseSinkHandle } from '../../processors/index.ts';
import { loadTfLlama, selectBackend } from '../../policy/index.ts';
import { createEventCodecs, createKafka, ensureTopics, type ProcessorHandle } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { pairedPermutationTest } from '../../eval/index.ts';
import { prepareSandbox, sandboxLine } from '../sandbox/create-sandbox.ts';
import { splitTasks } from '../tasks/split-tasks.ts';
import { gymSettings, type GymRunOptions, type GymSettings } from './gym-options.ts';
import { runSeed, type SeedResult } from './run-seed.ts';

/** What `turnstream gym --json` prints. */
export interface GymResult {
  /** The run's topics are `<topicPrefix>turnstream.*` (its turns, rewards, trajectories, samples); its models `gym-<run>-s<seed>`. */
  topicPrefix: string;
  suite: string;
  agent: string;
  model: string;
  /** Mean held-out pass@1 over seeds, before the first step and after the last. */
  before: number;
  after: number;
  /** GRPO steps per seed (gradient steps taken). */
  steps: number;
  tasks: { train: string[]; eval: string[] };
  seeds: number;
  /** Rollouts per task (n) and tasks per batch (B). */
  n: number;
  batch: number;
  per_task: Record<string, { before: number; after: number }>;
  /** Mean held-out pass@1 over seeds at each evaluated step. */
  curve: Array<{ step: number; passAt1: number; perSeed: number[] }>;
  /** Paired permutation test of after − before over (seed, held-out task) pairs. */
  p_value: number;
  test: { n: number; meanDiff: number; exact: boolean };
  wall_s: number;
  /** Where the time went (seconds, summed over seeds). */
  time: SeedResult['time'];
  groups: { trained: number; allEqual: number; batches: number };
  runs: SeedResult[];
  settings: Pick<GymSettings, 'temperature' | 'maxTokens' | 'lr' | 'klCoef' | 'evalEvery' | 'evalSamples' | 'parallel' | 'normalizeStd'>;
}

export async function runGym(options: GymRunOptions): Promise<GymResult> {
  const t0 = Date.now();
  const s = gymSettings(options);
  const { train, eval: held } = splitTasks(s.tasks, { heldOut: s.heldOut });
  if (train.length === 0 || held.length === 0)
    throw new Error(`the suite needs train and held-out tasks (has ${train.length} and ${held.length})`);
  const logger = createLogger('gym', 'warn');
  // the sandbox readied before anything starts: bubblewrap installed once here, not by each of the first rollouts
  s.onProgress?.(sandboxLine(await prepareSandbox()));
  const runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const naming = { prefix: `gym-${runId}.` };
  const kafka = createKafka({ brokers: s.brokers, clientId: 'turnstream-gym', logger: createLogger('kafka', 'error') });
  await ensureTopics(kafka, { naming });
  const codecs = await createEventCodecs({ registryUrl: s.registryUrl, naming });
  const weightsDir = await mkdtemp(join(tmpdir(), 'turnstream-gym-'));
  // The learner's backend first (native TensorFlow where it can be had): tensors belong to the backend they were made on.
  const backend = await selectBackend(undefined, { logger });
  s.onProgress?.(`gym: tfjs backend ${backend}`);
  // The base in tfjs, loaded once for every seed's learner.
  const baseTf = await loadTfLlama(s.model.path);
  const services: ProcessorHandle[] = [];
  let sink: ClickhouseSinkHandle | null = null;
  const runs: SeedResult[] = [];
  try {
    const common = { kafka, codecs, logger };
    services.push(await startTrajectoryAssembler({ ...common, settleMs: 30_000 }));
    services.push(await startGroupBuilder({ ...common, normalizeStd: s.normalizeStd, batchTimeoutMs: s.stepTimeoutMs }));
    if (s.clickhouse) {
      // Into the shared analytics tables: the runs show up by model id beside everything else.
      sink = startClickhouseSink({
        kafka,
        codecs,
        logger,
        groupId: `${naming.prefix}turnstream-clickhouse-sink`,
        analytics: { url: s.clickhouse.url, database: s.clickhouse.database ?? 'turnstream' },
      });
      await sink.ready;
    }
    const seeds = s.onlySeed ? [s.onlySeed] : Array.from({ length: s.seeds }, (_, i) => i + 1);
    for (const seed of seeds) {
      if (s.signal?.aborted) break;
      runs.push(await runSeed({ settings: s, runId, kafka, codecs, naming, weightsDir, baseTf, train, held, logger }, seed));
    }
  } finally {
    for (const svc of services) await svc.stop().catch(() => undefined);
    await sink?.stop().catch(() => undefined);
    baseTf.model.dispose();
    await rm(weightsDir, { recursive: true, force: true });
  }
  const summary = summarize(
    runs,
    s,
    train.map((t) => t.id),
    held.map((t) => t.id),
    (Date.now() - t0) / 1000,
  );
  return { topicPrefix: naming.prefix, ...summary };
}

const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

export function summarize(
  runs: SeedResult[],
  s: GymSettings,
  train: string[],
  evalTasks: string[],
  wallS: number,
): Omit<GymResult, 'topicPrefix'> {
  const first = (r: SeedResult) => r.evals[0];
  const last = (r: SeedResult) => r.evals[r.evals.length - 1];
  const steps = [...new Set(runs.flatMap((r) => r.evals.map((e) => e.step)))].sort((a, b) => a - b);
  const curve = steps.map((step) => {
    const perSeed = runs.map((r) => r.evals.find((e) => e.step === step)?.passAt1 ?? NaN).filter((x) => !Number.isNaN(x));
    return { step, passAt1: mean(perSeed), perSeed };
  });
  const perTask = Object.fromEntries(
    evalTasks.map((t) => [
      t,
      { before: mean(runs.map((r) => first(r).perTask[t] ?? 0)), after: mean(runs.map((r) => last(r).perTask[t] ?? 0)) },
    ]),
  );
  const pairsBefore = runs.flatMap((r) => evalTasks.map((t) => first(r).perTask[t] ?? 0));
  const pairsAfter = runs.flatMap((r) => evalTasks.map((t) => last(r).perTask[t] ?? 0));
  const test = pairedPermutationTest(pairsBefore, pairsAfter);
  const sum = (k: keyof SeedResult['time']) => runs.reduce((a, r) => a + r.time[k], 0);
  return {
    suite: s.suite,
    agent: s.agent,
    model: s.model.name,
    before: mean(runs.map((r) => first(r).passAt1)),
    after: mean(runs.map((r) => last(r).passAt1)),
    steps: Math.min(...runs.map((r) => r.steps.filter((x) => x.step !== null).length)),
    tasks: { train, eval: evalTasks },
    seeds: runs.length,
    n: s.rolloutsPerTask,
    batch: s.tasksPerStep,
    per_task: perTask,
    curve,
    p_value: test.p,
    test: { n: test.n, meanDiff: test.meanDiff, exact: test.exact },
    wall_s: Number(wallS.toFixed(1)),
    time: { rollouts: sum('rollouts'), verifier: sum('verifier'), training: sum('training'), eval: sum('eval') },
    groups: {
      trained: runs.reduce((a, r) => a + r.steps.reduce((b, x) => b + x.groupsTrained, 0), 0),
      allEqual: runs.reduce((a, r) => a + r.steps.reduce((b, x) => b + x.groupsEqual, 0), 0),
      batches: runs.reduce((a, r) => a + r.batches, 0),
    },
    runs,
    settings: {
      temperature: s.temperature,
      maxTokens: s.maxTokens,
      lr: s.lr,
      klCoef: s.klCoef,
      evalEvery: s.evalEvery,
      evalSamples: s.evalSamples,
      parallel: s.parallel,
      normalizeStd: s.normalizeStd,
    },
  };
}
