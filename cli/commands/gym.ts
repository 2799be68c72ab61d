/**
 * `turnstream gym [--tasks FILE] [--agent builtin|openclaw] [--json] …`: agentic RL from tasks
 * (docs/gym.md). Tool-using agents run a task suite in sandboxes through the gateway; each
 * rollout's verdict goes on Kafka as a Reward; the trajectory assembler and the group builder turn
 * rollout batches into group-relative samples (GRPO); the learner steps and the gateway swaps the
 * new version in. The local stack is started when it is not running (and stopped after, unless
 * `--keep-infra`). A bad task file is one line naming the task and the field, exit 2.
 *
 * `turnstream gym --merge A B …`: runs of single seeds (`--seed k`) joined into one report
 * (gym/runner/merge-runs.ts); each is a gym.json or the folder that holds one.
 *
 * `turnstream gym --base-rates [--tasks FILE] [--n 4]`: the suite's pass rates on the base model
 * before any training (gym/runner/run-base-rates.ts), through the gateway the gym plays through;
 * it needs no Kafka and trains nothing.
 */
import type { Command } from 'commander';
import { setMaxListeners } from 'node:events';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { basename, join, resolve } from 'node:path';
import { ErrorCodes, invalidInput, TurnstreamError } from '../../core/index.ts';
import {
  DEFAULT_BASE_RATE_N,
  loadTaskSuite,
  mergeGymResults,
  runBaseRates,
  runGym,
  writeGymReports,
  type AgentKind,
  type BaseRateReport,
  type GymResult,
  type GymRunOptions,
  type Task,
  type TaskSampling,
  type GymReward,
  type MergeSource,
} from '../../gym/index.ts';
import { stackDown, stackUpFor } from '../../infra/index.ts';
import { parseBrokers } from '../../streams/index.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';
import { servedModel } from '../served-model.ts';

/** The suite `turnstream gym` runs when none is given. */
export const DEFAULT_SUITE = fileURLToPath(new URL('../../gym/suites/answer-format.jsonl', import.meta.url));

interface GymFlags {
  tasks?: string;
  agent: string;
  quick?: boolean;
  steps?: string;
  seeds?: string;
  seed?: string;
  n?: string;
  batch?: string;
  evalEvery?: string;
  evalSamples?: string;
  testSamples?: string;
  temperature?: string;
  topP?: string;
  maxTokens?: string;
  lr?: string;
  kl?: string;
  loraLayers?: string;
  tisCap?: string;
  taskSampling?: string;
  reward?: string;
  lossAgg?: string;
  devOnly?: boolean;
  parallel?: string;
  out: string;
  json?: boolean;
  keepInfra?: boolean;
  model?: string;
  baseRates?: boolean;
  merge?: string[];
}

const int = (v: string | undefined, name: string, fallback: number, min = 1): number => {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw invalidInput(`--${name} must be an integer ≥ ${min} (got ${v})`, `--${name}`);
  return n;
};

/** The run's shape: `--quick` (≤ 10 min here) or the standard run; a value given keeps its place. */
export function gymRunShape(f: Pick<GymFlags, 'quick' | 'steps' | 'seeds' | 'n' | 'batch' | 'evalEvery' | 'evalSamples' | 'testSamples'>): {
  steps: number;
  seeds: number;
  rolloutsPerTask: number;
  tasksPerStep: number;
  evalEvery: number;
  evalSamples: number;
  testSamples: number;
} {
  const d = f.quick
    ? { steps: 6, seeds: 1, rolloutsPerTask: 4, tasksPerStep: 4, evalEvery: 3, evalSamples: 2, testSamples: 2 }
    : { steps: 30, seeds: 3, rolloutsPerTask: 8, tasksPerStep: 4, evalEvery: 5, evalSamples: 4, testSamples: 8 };
  return {
    steps: int(f.steps, 'steps', d.steps),
    seeds: int(f.seeds, 'seeds', d.seeds),
    rolloutsPerTask: int(f.n, 'n', d.rolloutsPerTask, 2),
    tasksPerStep: int(f.batch, 'batch', d.tasksPerStep),
    evalEvery: int(f.evalEvery, 'eval-every', d.evalEvery),
    evalSamples: int(f.evalSamples, 'eval-samples', d.evalSamples),
    testSamples: int(f.testSamples, 'test-samples', d.testSamples),
  };
}

/** The sampling and learning flags, checked before anything starts (`--kl 0` and `--tis-cap 0` turn their terms off). */
export function gymTuning(
  f: Pick<
    GymFlags,
    'temperature' | 'topP' | 'maxTokens' | 'lr' | 'kl' | 'loraLayers' | 'tisCap' | 'taskSampling' | 'reward' | 'lossAgg' | 'parallel'
  >,
): {
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  lr?: number;
  klCoef?: number;
  loraLayers?: number;
  tisCap?: number;
  taskSampling?: TaskSampling;
  reward?: GymReward;
  lossAggregation?: 'token' | 'sample';
  parallel?: number;
} {
  const topP = num(f.topP, 'top-p');
  if (topP !== undefined && topP > 1) throw invalidInput(`--top-p must be in (0, 1] (got ${f.topP})`, '--top-p');
  if (f.taskSampling !== undefined && f.taskSampling !== 'uniform' && f.taskSampling !== 'signal')
    throw invalidInput(`--task-sampling must be uniform or signal (got ${f.taskSampling})`, '--task-sampling');
  if (f.reward !== undefined && f.reward !== 'pass' && f.reward !== 'partial')
    throw invalidInput(`--reward must be pass or partial (got ${f.reward})`, '--reward');
  if (f.lossAgg !== undefined && f.lossAgg !== 'token' && f.lossAgg !== 'sample')
    throw invalidInput(`--loss-agg must be token or sample (got ${f.lossAgg})`, '--loss-agg');
  return {
    temperature: num(f.temperature, 'temperature'),
    topP,
    maxTokens: num(f.maxTokens, 'max-tokens'),
    lr: num(f.lr, 'lr'),
    klCoef: num(f.kl, 'kl', true),
    loraLayers: f.loraLayers === undefined ? undefined : int(f.loraLayers, 'lora-layers', 0, 0),
    tisCap: num(f.tisCap, 'tis-cap', true),
    taskSampling: f.taskSampling as TaskSampling | undefined,
    reward: f.reward as GymReward | undefined,
    lossAggregation: f.lossAgg as 'token' | 'sample' | undefined,
    parallel: num(f.parallel, 'parallel'),
  };
}

/** The flags that shape training, which `--base-rates` (no training) refuses. */
const TRAINING_FLAGS = [
  ['quick', '--quick'],
  ['steps', '--steps'],
  ['seeds', '--seeds'],
  ['seed', '--seed'],
  ['batch', '--batch'],
  ['evalEvery', '--eval-every'],
  ['evalSamples', '--eval-samples'],
  ['testSamples', '--test-samples'],
  ['lr', '--lr'],
  ['kl', '--kl'],
  ['loraLayers', '--lora-layers'],
  ['tisCap', '--tis-cap'],
  ['taskSampling', '--task-sampling'],
  ['reward', '--reward'],
  ['lossAgg', '--loss-agg'],
  ['devOnly', '--dev-only'],
  ['keepInfra', '--keep-infra'],
] as const;

/** `--dev-only` shapes a training run, and with `--base-rates` leaves the test split unmeasured. */
const BASE_RATE_FLAGS = TRAINING_FLAGS.filter(([k]) => k !== 'devOnly');

/** `--base-rates`: rollouts per task (`--n`, default 4); a flag that shapes training is refused. */
export function baseRateShape(f: Partial<Omit<GymFlags, 'agent' | 'out'>>): { n: number; devOnly: boolean } {
  const given = BASE_RATE_FLAGS.filter(([k]) => f[k] !== undefined).map(([, flag]) => flag);
  if (given.length > 0)
    throw invalidInput(
      `--base-rates measures the base model and trains nothing: ${given.join(', ')} ${given.length === 1 ? 'does' : 'do'} not apply`,
      given[0],
    );
  return { n: int(f.n, 'n', DEFAULT_BASE_RATE_N), devOnly: f.devOnly === true };
}

const num = (v: string | undefined, name: string, zeroAllowed = false): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || (n === 0 && !zeroAllowed))
    throw invalidInput(`--${name} must be a ${zeroAllowed ? 'non-negative' : 'positive'} number (got ${v})`, `--${name}`);
  return n;
};

/** Ctrl-C: the rollouts and their sandboxes end, the services stop, then the process exits (a second Ctrl-C: at once). */
function stopOnSignals(progress: (line: string) => void): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
  // every rollout in flight (up to --parallel) listens on it and removes its listener when it ends: not a leak
  setMaxListeners(0, abort.signal);
  const onSignal = () => {
    if (abort.signal.aborted) process.exit(130);
    progress('gym: stopping (Ctrl-C again to quit at once)…');
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: abort.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

function printBaseRates(r: BaseRateReport, file: string): void {
  const say = (s: string) => process.stdout.write(`${s}\n`);
  const parts = (x: BaseRateReport['all']) =>
    Object.keys(x.parts).length > 1
      ? `; ${Object.entries(x.parts)
          .map(([p, v]) => `${p} ${v.toFixed(2)}`)
          .join(', ')}`
      : '';
  const split = (x: BaseRateReport['all']) => `${x.rate.toFixed(2)} (${x.learnable}/${x.tasks} in the learnable band${parts(x)})`;
  say(
    `gym base rates of ${r.suite} on ${r.model} (${r.agent} agent, ${r.n} rollouts per task, temperature ${r.temperature}, top-p ${r.topP}): train ${split(r.train)}, dev ${split(r.dev)}, test ${r.devOnly ? 'not measured (--dev-only)' : split(r.test)}`,
  );
  const ids = (pick: (rate: number) => boolean) =>
    r.tasks
      .filter((t) => pick(t.rate))
      .map((t) => t.id)
      .join(', ') || 'none';
  say(`  never solved: ${ids((x) => x === 0)}`);
  say(`  always solved: ${ids((x) => x === 1)}`);
  say(`  band ${r.band[0]}–${r.band[1]}; ${r.wallS.toFixed(0)} s; per task: ${file}`);
}

/** `--base-rates`: the suite's pass rates on the base model, written to `--out` and printed. */
async function baseRatesAction(f: GymFlags, config: TurnstreamConfig, tasks: Task[], suite: string): Promise<void> {
  const { n, devOnly } = baseRateShape(f);
  const sampling = {
    temperature: num(f.temperature, 'temperature'),
    topP: gymTuning({ topP: f.topP }).topP,
    maxTokens: num(f.maxTokens, 'max-tokens'),
    parallel: num(f.parallel, 'parallel'),
  };
  const served = await servedModel(config, { spec: f.model });
  if (served.kind !== 'llama')
    throw invalidInput('turnstream gym measures a GGUF model served by llama.cpp (TURNSTREAM_MODEL, --model)', '--model');
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const stop = stopOnSignals(progress);
  let result: BaseRateReport;
  try {
    result = await runBaseRates({
      tasks,
      suite,
      model: { name: served.name, path: served.path, sha256: served.sha256 },
      agent: f.agent as AgentKind,
      n,
      devOnly,
      ...sampling,
      threads: config.llama.threads,
      systemPrompt: served.systemPrompt,
      stack: config,
      signal: stop.signal,
      onProgress: progress,
    });
  } catch (err) {
    if (stop.signal.aborted && err instanceof TurnstreamError && err.code === ErrorCodes.ABORTED) process.exit(130);
    throw err;
  } finally {
    stop.dispose();
  }
  const dir = resolve(f.out);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${suite}-base-rates-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await writeFile(file, JSON.stringify(result, null, 2) + '\n');
  if (f.json) process.stdout.write(JSON.stringify(result) + '\n');
  else printBaseRates(result, file);
  process.exit(0);
}

/** The flags a merge takes: the reports, `--out` and `--json`; anything that would run something is refused. */
export function mergeFlagsCheck(f: Partial<GymFlags>): void {
  const runFlags = [
    ...TRAINING_FLAGS,
    ['tasks', '--tasks'],
    ['n', '--n'],
    ['temperature', '--temperature'],
    ['topP', '--top-p'],
    ['maxTokens', '--max-tokens'],
    ['parallel', '--parallel'],
    ['model', '--model'],
    ['baseRates', '--base-rates'],
  ] as const;
  const given: string[] = runFlags.filter(([k]) => f[k] !== undefined).map(([, flag]) => flag);
  if (f.agent !== undefined && f.agent !== 'builtin') given.push('--agent');
  if (given.length > 0)
    throw invalidInput(
      `--merge joins finished runs and runs nothing: ${given.join(', ')} ${given.length === 1 ? 'does' : 'do'} not apply`,
      given[0],
    );
}

/** A report to merge: a gym.json, or the folder a run wrote it to. */
async function readReport(path: string): Promise<MergeSource> {
  const at = resolve(path);
  let file = at;
  let text: string;
  try {
    if ((await stat(at)).isDirectory()) file = join(at, 'gym.json');
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw invalidInput(`--merge: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, '--merge');
  }
  try {
    return { source: path, result: JSON.parse(text) as GymResult };
  } catch {
    throw invalidInput(`--merge: ${file} is not JSON`, '--merge');
  }
}

/** `--merge`: the joined report, written to `--out` and printed. */
async function mergeAction(f: GymFlags): Promise<void> {
  mergeFlagsCheck(f);
  const result = mergeGymResults(await Promise.all((f.merge ?? []).map(readReport)));
  const dir = resolve(f.out, `${result.suite}-merged-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  await writeGymReports(result, dir);
  if (f.json) process.stdout.write(JSON.stringify(result) + '\n');
  else printSummary(result, dir);
}

function printSummary(r: GymResult, dir: string): void {
  const say = (s: string) => process.stdout.write(`${s}\n`);
  const partsOf = (x: GymResult['test_split']) =>
    Object.entries(x.parts)
      .map(([p, v]) => `${p} ${v.before.toFixed(2)} → ${v.after.toFixed(2)} (p ${v.p_value.toPrecision(2)})`)
      .join(', ');
  if (r.settings.devOnly) {
    say(
      `gym ${r.suite} on ${r.model} (${r.agent} agent), a tuning run (dev only): dev pass@1 ${r.dev_split.before.toFixed(2)} → ${r.dev_split.after.toFixed(2)} over ${r.seeds} seed(s), ${r.steps} GRPO steps, p ${r.dev_split.p_value.toPrecision(2)}`,
    );
    if (Object.keys(r.dev_split.parts).length > 1) say(`  dev parts: ${partsOf(r.dev_split)}`);
  } else {
    say(
      `gym ${r.suite} on ${r.model} (${r.agent} agent): test pass@1 ${r.before.toFixed(2)} → ${r.after.toFixed(2)} over ${r.seeds} seed(s), ${r.steps} GRPO steps, p ${r.p_value.toPrecision(2)}`,
    );
    if (Object.keys(r.test_split.parts).length > 1) say(`  test parts: ${partsOf(r.test_split)}`);
    say(`  per seed (test): ${r.per_seed.map((x) => `${x.seed}: ${x.test.before.toFixed(2)} → ${x.test.after.toFixed(2)}`).join(', ')}`);
  }
  say(
    `  dev: ${r.dev_split.before.toFixed(2)} → ${r.dev_split.after.toFixed(2)}; curve ${r.dev_split.curve.map((c) => `${c.step}:${c.passAt1.toFixed(2)}`).join('  ')}`,
  );
  if (r.merged)
    say(`  merged from ${r.merged.map((m) => `${m.source} (seed ${m.seeds.join(', ')}, ${m.wall_s.toFixed(0)} s)`).join('; ')}`);
  say(
    `  time: ${r.wall_s.toFixed(0)} s${r.merged ? ' summed over the runs' : ''} (rollouts ${r.time.rollouts.toFixed(0)} s, training ${r.time.training.toFixed(0)} s, eval ${r.time.eval.toFixed(0)} s; verifiers ${r.time.verifier.toFixed(1)} s summed)`,
  );
  say(
    `  groups: ${r.groups.trained} with a signal, ${r.groups.allEqual} all-equal (skipped), in ${r.groups.batches} batches; ${r.groups.rejectedSteps} steps undone by the KL guard`,
  );
  say(
    `  rollout/trainer mismatch: |Δ log p| ${r.mismatch.absLogprob.toFixed(3)}, k3 KL ${r.mismatch.kl.toFixed(4)}, ${(100 * r.mismatch.truncated).toFixed(1)}% of tokens at the importance cap (mean over ${r.mismatch.steps} steps)`,
  );
  for (const { seed, stalled } of r.runs)
    if (stalled)
      say(`  seed ${seed} stopped early: ${stalled.idleBatches} batches in a row without a signal, after ${stalled.afterBatches}`);
  say(`  reports: ${dir}`);
}

export function register(program: Command): void {
  program
    .command('gym')
    .description('agentic RL from tasks: sandboxed tool-using rollouts through the gateway, verifier rewards, GRPO through the pipeline')
    .option('--tasks <file>', `a task suite (JSONL; docs/gym.md); default the shipped ${basename(DEFAULT_SUITE)}`)
    .option('--agent <name>', 'builtin or openclaw', 'builtin')
    .option('--quick', 'a short run: 1 seed, 6 steps of 4 tasks × 4 rollouts (≤ 10 min on 2 cores)')
    .option('--steps <n>', 'GRPO steps per seed (default 30)')
    .option('--seeds <n>', 'seeds 1..n, each from the base model (default 3)')
    .option('--seed <k>', 'run only seed k')
    .option('--n <n>', 'rollouts per task (default 8; 4 with --quick or --base-rates)')
    .option('--batch <n>', 'tasks per step (default 4)')
    .option('--eval-every <k>', 'dev pass@1 every k steps (default 5)')
    .option('--eval-samples <n>', 'samples per dev task (default 4)')
    .option('--test-samples <n>', 'samples per test task, before the first step and after the last (default 8; 2 with --quick)')
    .option('--temperature <t>', 'rollout temperature (default 0.7)')
    .option('--top-p <p>', 'rollout top-p (default 1: the whole distribution; the trainer scores the same nucleus)')
    .option('--max-tokens <n>', 'most tokens of one reply (default 192)')
    .option('--lr <x>', 'learning rate of the LoRA adapter (default 1e-3)')
    .option('--kl <coef>', 'weight of the KL penalty to the base model in each step (default 0.05; 0: none)')
    .option('--lora-layers <n>', 'the LoRA adapter on the last n layers of the model (default 8; 0: every layer)')
    .option('--tis-cap <c>', 'cap of the truncated importance weights against the engine’s log-probs (default 2; 0: off)')
    .option(
      '--task-sampling <how>',
      'signal (the default: tasks likelier to give a group with a signal) or uniform (each train task in turn)',
    )
    .option('--reward <what>', 'pass (1 when the whole verdict passes) or partial (the share of its parts and checks that held)')
    .option(
      '--loss-agg <how>',
      'token (the default: one mean over every trained token of a step) or sample (each rollout’s mean, then their mean)',
    )
    .option('--dev-only', 'a tuning run: evaluate the dev split only, leaving test unseen (with --base-rates: measure train and dev only)')
    .option('--parallel <n>', 'rollouts decoded side by side (default min(8, n))')
    .option('--model <spec>', 'the model (TURNSTREAM_MODEL); a GGUF served by llama.cpp')
    .option('--out <dir>', 'where the reports go', join('.turnstream', 'gym'))
    .option('--keep-infra', 'leave the local stack running if this command started it')
    .option('--base-rates', 'measure the suite’s pass rates on the base model (--n rollouts per task; no training, no Kafka) and stop')
    .option('--merge <reports...>', 'join runs of single seeds (--seed k) into one report: each a gym.json or its folder')
    .option('--json', 'print the result as one JSON object')
    .action(async (f: GymFlags) => {
      if (f.merge) return mergeAction(f);
      const config = loadConfig();
      if (f.agent !== 'builtin' && f.agent !== 'openclaw')
        throw invalidInput(`--agent must be builtin or openclaw (got ${f.agent})`, '--agent');
      const file = resolve(f.tasks ?? DEFAULT_SUITE);
      const tasks = await loadTaskSuite(file);
      const suite = basename(file).replace(/\.jsonl$/, '');
      if (f.baseRates) return baseRatesAction(f, config, tasks, suite);
      const shape = gymRunShape(f);
      const tuning = gymTuning(f);
      const onlySeed = f.seed === undefined ? undefined : Number(f.seed);
      if (onlySeed !== undefined && !(Number.isInteger(onlySeed) && onlySeed >= 1 && onlySeed <= shape.seeds)) {
        throw invalidInput(`--seed must be between 1 and --seeds (${shape.seeds})`, '--seed');
      }
      const served = await servedModel(config, { spec: f.model });
      if (served.kind !== 'llama')
        throw invalidInput('turnstream gym trains a GGUF model served by llama.cpp (TURNSTREAM_MODEL, --model)', '--model');
      const progress = (line: string) => process.stderr.write(`${line}\n`);
      const stack = await stackUpFor(config, (p) => progress(`  ${p.service}: ${p.message}`));
      const startedInfra = Object.values(stack.services).some((s) => s.state === 'started');
      const stop = stopOnSignals(progress);
      try {
        const options: GymRunOptions = {
          tasks,
          suite,
          agent: f.agent,
          brokers: parseBrokers(stack.brokers),
          registryUrl: stack.registryUrl,
          // The configuration the run's services are built from, as `up`'s (Kafka's and the registry's security included).
          stack: config,
          model: { name: served.name, path: served.path, sha256: served.sha256 },
          systemPrompt: served.systemPrompt,
          ...shape,
          onlySeed,
          ...tuning,
          devOnly: f.devOnly,
          threads: config.llama.threads,
          normalizeStd: config.grpo.normalizeStd,
          clickhouse: {
            url: stack.clickhouseUrl,
            database: config.clickhouse.database,
            username: config.clickhouse.username,
            password: config.clickhouse.password,
            tls: config.clickhouse.tls,
          },
          signal: stop.signal,
          onProgress: progress,
        };
        const result = await runGym(options);
        const dir = resolve(f.out, `${options.suite}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
        await writeGymReports(result, dir);
        if (f.json) process.stdout.write(JSON.stringify(result) + '\n');
        else printSummary(result, dir);
      } catch (err) {
        // Ctrl-C: the rollouts in flight end aborted; that is the stop asked for, not an error.
        if (!(stop.signal.aborted && err instanceof TurnstreamError && err.code === ErrorCodes.ABORTED)) throw err;
        progress('gym: stopped');
      } finally {
        stop.dispose();
        if (startedInfra && !f.keepInfra) await stackDown({ home: config.home });
      }
      process.exit(stop.signal.aborted ? 130 : 0);
    });
}
