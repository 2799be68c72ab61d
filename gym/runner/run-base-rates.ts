/**
 * `turnstream gym --base-rates`: a suite's base pass rates on the model the gym would train, n
 * rollouts per task through the gateway a seed plays through (gym-gateway.ts), with the gym's
 * sampling, before any training. The gateway only serves: no Kafka, nothing recorded or trained.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../core/index.ts';
import type { AgentKind } from '../agent/rollout-types.ts';
import { measureBaseRates, type BaseRates } from '../base-rates.ts';
import type { Task } from '../tasks/task.ts';
import { prepareSandbox, sandboxLine } from '../sandbox/create-sandbox.ts';
import { startGymGateway } from './gym-gateway.ts';
import { GYM_SAMPLING, type GymRunOptions } from './gym-options.ts';

/** Rollouts per task where `turnstream gym --base-rates` is given no `--n`. */
export const DEFAULT_BASE_RATE_N = 4;

/** Options of {@link runBaseRates}. */
export interface BaseRateRunOptions {
  /** The suite's tasks. */
  tasks: Task[];
  /** The suite's name (the result and the file it is written to). */
  suite: string;
  /** The GGUF model served by llama.cpp: its base, as a gym run starts from. */
  model: GymRunOptions['model'];
  /** Which agent plays. @default 'builtin' */
  agent?: AgentKind;
  /** Rollouts per task. @default {@link DEFAULT_BASE_RATE_N} */
  n?: number;
  /** Rollout temperature. @default the gym's (0.7) */
  temperature?: number;
  /** Rollout top-p. @default the gym's (1) */
  topP?: number;
  /** Most tokens of one reply. @default the gym's (192) */
  maxTokens?: number;
  /** Leave the test split unseen (tuning): its tasks are not rolled out. @default false */
  devOnly?: boolean;
  /** Rollouts decoded side by side (llama.cpp sequences), and run at once. @default min(8, n) */
  parallel?: number;
  /** llama.cpp threads. @default the gateway's (half the cores) */
  threads?: number;
  /** System prompt of the served model. @default the catalog's */
  systemPrompt?: string;
  /** The configuration the gateway is built from (stack/), as a gym run's. @default resolveSettings() */
  stack?: GymRunOptions['stack'];
  /** Stops the rollouts (their sandboxes disposed); the run rejects with TS_ERR_ABORTED. */
  signal?: AbortSignal;
  onProgress?: (line: string) => void;
}

/** What `turnstream gym --base-rates --json` prints and writes. */
export type BaseRateReport = { suite: string } & BaseRates;

export async function runBaseRates(o: BaseRateRunOptions): Promise<BaseRateReport> {
  const n = o.n ?? DEFAULT_BASE_RATE_N;
  const agent = o.agent ?? 'builtin';
  const parallel = o.parallel ?? Math.min(8, n);
  // the sandbox readied before the rollouts start: bubblewrap installed once here, not by each of the first rollouts
  o.onProgress?.(sandboxLine(await prepareSandbox()));
  const runId = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const weightsDir = await mkdtemp(join(tmpdir(), 'turnstream-gym-base-'));
  try {
    const gw = await startGymGateway({
      stack: o.stack,
      settings: { model: o.model, agent, parallel, threads: o.threads, systemPrompt: o.systemPrompt },
      modelId: `gym-base-${runId}`,
      weightsDir,
      logger: createLogger('gym', 'warn'),
    });
    try {
      let passed = 0;
      const rates = await measureBaseRates(o.tasks, {
        n,
        concurrency: parallel,
        sessionPrefix: `gym-base-${runId}`,
        rollout: {
          baseURL: gw.url,
          model: o.model.name,
          agent,
          sampling: {
            temperature: o.temperature ?? GYM_SAMPLING.temperature,
            topP: o.topP ?? GYM_SAMPLING.topP,
            maxTokens: o.maxTokens ?? GYM_SAMPLING.maxTokens,
          },
        },
        devOnly: o.devOnly,
        signal: o.signal,
        // A line every round's worth of rollouts (rollout k of every task runs before rollout k + 1 of any).
        onRollout: (r, done, total) => {
          if (r.verdict.passed) passed++;
          if (done % (total / n) === 0 || done === total) o.onProgress?.(`gym base rates: ${done}/${total} rollouts, ${passed} passed`);
        },
      });
      return { suite: o.suite, ...rates };
    } finally {
      await gw.stop();
    }
  } finally {
    await rm(weightsDir, { recursive: true, force: true });
  }
}
