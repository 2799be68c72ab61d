/**
 * Base pass rates: n rollouts of every task on the served policy, as the gym would run them before
 * any training, so a suite can keep the tasks the base model solves sometimes but not always (a
 * group whose n rewards are all equal carries no GRPO signal). Bench-style: it measures, prints
 * progress through a callback, and returns one JSON-ready object.
 */
import { ErrorCodes, invalidInput, TurnstreamError } from '../core/index.ts';
import { DEFAULT_SAMPLING } from './agent/builtin-agent.ts';
import { runRollout } from './agent/run-rollout.ts';
import type { RolloutOptions, RolloutResult, StoppedBy } from './agent/rollout-types.ts';
import { splitTasks } from './tasks/split-tasks.ts';
import type { Task, TaskSplit } from './tasks/task.ts';

/** The band of base rates worth training on: solved sometimes, not always. */
export const LEARNABLE_BAND: readonly [number, number] = [0.1, 0.6];

/** Options of {@link measureBaseRates}. */
export interface BaseRateOptions {
  /** Rollouts per task (the reference's group size is 8). */
  n: number;
  /** Every rollout's options (the gateway, model, sampling, agent…); session, metadata and signal are set per rollout. */
  rollout: Omit<RolloutOptions, 'sessionId' | 'metadata' | 'signal'>;
  /** Rollouts at once (match the gateway's LLAMA_PARALLEL so they decode side by side). @default 2 */
  concurrency?: number;
  /** Prefix of the rollouts' session ids and groups. @default `gym-base-<time>` */
  sessionPrefix?: string;
  /** The rates' band for {@link TaskBaseRate.learnable}. @default {@link LEARNABLE_BAND} */
  band?: readonly [number, number];
  /** Leave the test split unseen: its tasks are not rolled out, and `test` counts none. @default false */
  devOnly?: boolean;
  /** Called after each rollout (progress). */
  onRollout?: (result: RolloutResult, done: number, total: number) => void;
  /** Aborting stops the rollouts in flight (their sandboxes disposed) and rejects with TS_ERR_ABORTED. */
  signal?: AbortSignal;
}

/** One task's measurement. */
export interface TaskBaseRate {
  id: string;
  split: TaskSplit;
  /** Rollouts run. */
  n: number;
  /** Rollouts that passed. */
  passes: number;
  /** passes / n. */
  rate: number;
  /** Pass rate of each named part of the verdict. */
  parts: Record<string, number>;
  /** Within the band: solved sometimes, not always. */
  learnable: boolean;
  /** Mean model calls per rollout. */
  meanSteps: number;
  /** How the episodes ended. */
  stoppedBy: Record<StoppedBy, number>;
  /** Mean wall time of a rollout, ms. */
  meanMs: number;
  /** A few of the errors of rollouts that ended in one. */
  errors: string[];
  /** The first few final answers, with their verdicts (what the model does with the task). */
  replies: Array<{ answer: string | null; passed: boolean; parts: Record<string, boolean> }>;
}

/** Rates over a set of tasks (mean of the per-task rates). */
export interface SplitRate {
  tasks: number;
  rate: number;
  learnable: number;
  /** Each named part's rate (mean of the per-task rates). */
  parts: Record<string, number>;
}

/** What {@link measureBaseRates} returns. */
export interface BaseRates {
  model: string;
  agent: string;
  n: number;
  temperature: number;
  maxTokens: number;
  band: readonly [number, number];
  topP: number;
  /** The test split was left unseen (`--dev-only`). */
  devOnly: boolean;
  train: SplitRate;
  dev: SplitRate;
  test: SplitRate;
  all: SplitRate;
  tasks: TaskBaseRate[];
  wallS: number;
}

const summary = (rates: TaskBaseRate[]): SplitRate => {
  const names = [...new Set(rates.flatMap((r) => Object.keys(r.parts)))];
  const avg = (xs: number[]) => (xs.length ? round(xs.reduce((s, x) => s + x, 0) / xs.length) : 0);
  return {
    tasks: rates.length,
    rate: avg(rates.map((r) => r.rate)),
    learnable: rates.filter((r) => r.learnable).length,
    parts: Object.fromEntries(names.map((p) => [p, avg(rates.map((r) => r.parts[p] ?? 0))])),
  };
};

const round = (x: number): number => Math.round(x * 1e4) / 1e4;

/**
 * Runs n rollouts of every task, `concurrency` at a time, interleaved (rollout k of every task
 * before rollout k + 1 of any), and returns each task's pass rate and the rates per split.
 * @throws TurnstreamError TS_ERR_ABORTED when `signal` aborts; the first error a rollout throws
 * (no sandbox, a bug) — a failed model call is not one: it is a rollout that `stoppedBy: 'error'`
 */
export async function measureBaseRates(tasks: readonly Task[], options: BaseRateOptions): Promise<BaseRates> {
  const { n } = options;
  if (!Number.isInteger(n) || n < 1) throw invalidInput(`n must be a positive integer, got ${n}`, 'n');
  const concurrency = options.concurrency ?? 2;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw invalidInput(`concurrency must be a positive integer`, 'concurrency');
  const band = options.band ?? LEARNABLE_BAND;
  const prefix = options.sessionPrefix ?? `gym-base-${Date.now()}`;
  const started = performance.now();
  const splits = splitTasks(tasks);
  const splitOf = new Map<Task, TaskSplit>([
    ...splits.train.map((t) => [t, 'train'] as const),
    ...splits.dev.map((t) => [t, 'dev'] as const),
    ...splits.test.map((t) => [t, 'test'] as const),
  ]);
  // Tuning on train and dev must not look at test, not even at its base rates.
  const measured = options.devOnly ? tasks.filter((t) => splitOf.get(t) !== 'test') : [...tasks];
  const jobs = Array.from({ length: n }, (_, k) => measured.map((task) => ({ task, k }))).flat();
  const results = new Map<Task, RolloutResult[]>(measured.map((t) => [t, []]));
  const ac = new AbortController();
  const onAbort = () => ac.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length && !ac.signal.aborted) {
      const { task, k } = jobs[next++];
      const r = await runRollout(task, {
        ...options.rollout,
        sessionId: `${prefix}-${task.id}-${k}`,
        metadata: { gym_task: task.id, gym_group: `${prefix}-${task.id}`, gym_rollout: String(k) },
        signal: ac.signal,
      });
      results.get(task)!.push(r);
      options.onRollout?.(r, ++done, jobs.length);
    }
  };
  try {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, jobs.length) }, () =>
        worker().catch((err: unknown) => {
          ac.abort(); // one failure stops the others: their sandboxes are disposed
          throw err;
        }),
      ),
    );
  } catch (err) {
    if (options.signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'the base-rate measurement was aborted', { cause: err });
    throw err;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  if (options.signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'the base-rate measurement was aborted');
  const rates: TaskBaseRate[] = measured.map((task) => {
    const rs = results.get(task)!;
    const passes = rs.filter((r) => r.verdict.passed).length;
    const rate = round(passes / rs.length);
    const names = [...new Set(rs.flatMap((r) => Object.keys(r.verdict.parts)))];
    const parts = Object.fromEntries(names.map((p) => [p, round(rs.filter((r) => r.verdict.parts[p]).length / rs.length)]));
    const stoppedBy: Record<StoppedBy, number> = { answer: 0, max_turns: 0, timeout: 0, error: 0 };
    for (const r of rs) stoppedBy[r.stoppedBy]++;
    return {
      id: task.id,
      split: splitOf.get(task)!,
      n: rs.length,
      passes,
      rate,
      parts,
      learnable: rate >= band[0] && rate <= band[1],
      meanSteps: round(rs.reduce((s, r) => s + r.steps, 0) / rs.length),
      stoppedBy,
      meanMs: Math.round(rs.reduce((s, r) => s + r.timings.totalMs, 0) / rs.length),
      errors: [...new Set(rs.flatMap((r) => (r.error ? [r.error] : [])))].slice(0, 3),
      replies: rs
        .slice(0, 3)
        .map((r) => ({ answer: r.finalAnswer?.slice(0, 400) ?? null, passed: r.verdict.passed, parts: r.verdict.parts })),
    };
  });
  const sampling = { ...DEFAULT_SAMPLING, ...options.rollout.sampling };
  return {
    model: options.rollout.model,
    agent: options.rollout.agent ?? 'builtin',
    n,
    temperature: sampling.temperature,
    topP: sampling.topP ?? 1,
    maxTokens: sampling.maxTokens,
    band,
    devOnly: options.devOnly ?? false,
    train: summary(rates.filter((r) => r.split === 'train')),
    dev: summary(rates.filter((r) => r.split === 'dev')),
    test: summary(rates.filter((r) => r.split === 'test')),
    all: summary(rates),
    tasks: rates,
    wallS: Math.round((performance.now() - started) / 100) / 10,
  };
}
