/**
 * `turnstream eval` behind its flags: simulated users with hidden preferences talk to the model;
 * the score is the share of replies to held-out prompts that satisfy them, per weight version,
 * over several seeds. In-process by default (the pipeline's judge, sample builder and learner
 * step, called directly); `--pipeline` sends the personas through the gateway and the Kafka
 * pipeline; `--workers N` shares the runs out over N processes; `--users K` is "many users, one
 * model". The CLI parses the flags and prints; everything between is here.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ErrorCodes, invalidInput, TurnstreamError, type Logger } from '../core/index.ts';
import { initCheckpoint, selectBackend, type BackendName } from '../policy/index.ts';
import { parseBrokers } from '../streams/index.ts';
import { stackEndpoints, type LearnerPlan } from '../stack/index.ts';
import type { EvalConfig, EvalServedModel } from './eval-config.ts';
import { applyRunDefaults, type EvalFlags } from './eval-flags.ts';
import { evalOutput, usersOutput } from './eval-output.ts';
import { runInWorkers, type EvalCommandLine } from './eval-workers.ts';
import { runMultiUserEval } from './multi-user.ts';
import { openEvalModels } from './open-eval-models.ts';
import { evalLearnerPlan, learnerReport, type EvalLearnerOptions } from './eval-learner.ts';
import { defaultSharedPersona, runPersonas } from './persona-selection.ts';
import type { Persona } from './persona.ts';
import { runPipelineEval } from './pipeline.ts';
import { toResultJson, writeReports } from './report.ts';
import { runEval, type EvalResult } from './run-eval.ts';

/** Everything `turnstream eval` runs on: its flags, the configuration, and how the command was started. */
export interface EvalCommandSettings {
  /** The flags as parsed (with their declared defaults); the run's own defaults are applied to a copy. */
  flags: EvalFlags;
  /** Whether a flag was given on the command line (else it holds its declared default). */
  given: (flag: keyof EvalFlags) => boolean;
  config: EvalConfig;
  /** Resolves (and the first time fetches) the model to train: `--model`, else `config.model.spec`. */
  servedModel: (spec: string | undefined) => Promise<EvalServedModel>;
  /** How the command was started, for `--workers` to start its children the same way. */
  commandLine: EvalCommandLine;
  /** Progress lines for stderr (stdout carries only the result). */
  progress: (line: string) => void;
  /** The eval's logger (the CLI's: warn, on stderr). */
  logger: Logger;
}

/** What the command prints on stdout, and the error it then ends with (some runs failed). */
export interface EvalCommandOutcome {
  output: string;
  error?: TurnstreamError;
}

/** A run's flags after the run defaults, checked, with its personas and model. */
interface PreparedRun {
  f: EvalFlags;
  heldOut: number;
  onlySeed: number | undefined;
  /** What `--model` (else the configuration) names, before it is resolved. */
  builtin: boolean;
  personas: Persona[];
  shared: Persona | null;
  served: EvalServedModel;
  /** What the runs change of the configured learner: `--batch-size`, `--lr`, `--lora-last-layers` (eval/eval-learner.ts). */
  learner: EvalLearnerOptions;
  /** The learner of the runs: the configured one with eval's overrides. */
  plan: LearnerPlan;
}

/**
 * Runs `turnstream eval`: checks the flags and the persona file before any model loads, runs the
 * evaluation, writes the reports (and `<home>/eval/latest.json`) and returns what to print.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a bad flag or persona file; TS_ERR_INTERNAL when every `--workers` run failed
 */
export async function runEvalCommand(s: EvalCommandSettings): Promise<EvalCommandOutcome> {
  const run = await prepareRun(s);
  return run.f.users ? runUsers(s, run) : runPersonaEval(s, run);
}

/** The flags checked and completed, the personas selected, the model resolved and the tfjs backend chosen. */
async function prepareRun(s: EvalCommandSettings): Promise<PreparedRun> {
  const f = { ...s.flags };
  if (!['combined', 'rl', 'opd'].includes(f.method))
    throw invalidInput(`--method must be combined, rl or opd (got ${f.method})`, '--method');
  const peakSamples = Number(f.peakSamples);
  if (!(Number.isInteger(peakSamples) && peakSamples >= 0))
    throw invalidInput(`--peak-samples must be an integer >= 0 (got ${f.peakSamples})`, '--peak-samples');
  const heldOut = Number(f.heldOut);
  if (!(heldOut > 0 && heldOut < 1)) throw invalidInput(`--held-out must be a share between 0 and 1 (got ${f.heldOut})`, '--held-out');
  // The persona file is checked before tfjs loads: a bad file is one line, nothing else.
  const builtin = (f.model ?? s.config.model.spec).trim() === 'builtin';
  applyRunDefaults(f, builtin, s.given, availableParallelism());
  const onlySeed = f.seed === undefined ? undefined : Number(f.seed);
  if (onlySeed !== undefined && !(Number.isInteger(onlySeed) && onlySeed >= 1 && onlySeed <= Number(f.seeds)))
    throw invalidInput(`--seed must be an integer from 1 to --seeds (got ${f.seed})`, '--seed');
  // A LoRA step per 2 interactions learned fastest (docs/learning.md); the built-in model keeps 4.
  if (!builtin && !s.given('batchSize')) f.batchSize = '2';
  const { personas, shared } = await runPersonas(f, builtin);
  const served = await s.servedModel(f.model);
  const backend = await selectBackend(f.backend as BackendName | undefined, { logger: s.logger });
  s.progress(`tfjs backend ${backend}${f.backend ? ' (forced)' : ' (auto)'}`);
  const learner = {
    batchSize: Number(f.batchSize),
    lr: f.lr ? Number(f.lr) : undefined,
    loraLastLayers: f.loraLastLayers ? Number(f.loraLastLayers) : undefined,
  };
  return { f, heldOut, onlySeed, builtin, personas, shared, served, learner, plan: evalLearnerPlan(s.config, served, learner) };
}

/** Every run starts from the base: the served model's version 0 (for the built-in model the store's, the shipped base when it had none). */
const baseOf = async (config: EvalConfig, served: EvalServedModel): Promise<{ uri: string }> =>
  served.kind === 'builtin' ? await initCheckpoint(config.weightsDir) : { uri: '' };

/** `--users K`: many users, one model, consensus on vs off; writes eval-users.json. */
async function runUsers(s: EvalCommandSettings, run: PreparedRun): Promise<EvalCommandOutcome> {
  const { f, served } = run;
  const base = await baseOf(s.config, served);
  const batchSize = s.given('batchSize') ? Number(f.batchSize) : 8;
  const plan = evalLearnerPlan(s.config, served, { ...run.learner, batchSize });
  const lr = plan.settings.lr;
  const persona = run.shared ?? (await defaultSharedPersona(run.builtin));
  const models = await openEvalModels(s.config, served, base.uri, f, plan);
  const res = await runMultiUserEval({
    models,
    persona,
    users: Number(f.users),
    interactions: Number(f.interactions),
    seeds: Number(f.seeds),
    adversaryRate: Number(f.adversaryRate),
    maxUserShare: Number(f.maxUserShare),
    sharedRate: Number(f.sharedRate),
    batchSize,
    method: f.method as 'combined' | 'rl' | 'opd',
    lr,
    heldOut: run.heldOut,
    heldOutSamples: Number(f.heldOutSamples),
    onProgress: s.progress,
  }).finally(() => models.close());
  const out = resolve(f.out);
  await mkdir(out, { recursive: true });
  await writeFile(join(out, 'eval-users.json'), JSON.stringify(res, null, 2) + '\n');
  return { output: usersOutput(res, f.json, join(out, 'eval-users.json')) };
}

/** What the in-process, pipeline and worker runs share. */
type CommonOptions = ReturnType<typeof commonOptions>;

const commonOptions = (s: EvalCommandSettings, run: PreparedRun) => ({
  personas: run.personas,
  interactions: Number(run.f.interactions),
  seeds: Number(run.f.seeds),
  method: run.f.method as 'combined' | 'rl' | 'opd',
  batchSize: Number(run.f.batchSize),
  lr: run.plan.settings.lr,
  heldOut: run.heldOut,
  heldOutSamples: Number(run.f.heldOutSamples),
  peakSamples: Number(run.f.peakSamples),
  onlySeed: run.onlySeed,
  onProgress: s.progress,
});

/** The personas' evaluation: runs it (in workers, through the pipeline, or in-process), writes the reports, returns the summary. */
async function runPersonaEval(s: EvalCommandSettings, run: PreparedRun): Promise<EvalCommandOutcome> {
  const { f, served } = run;
  const base = await baseOf(s.config, served);
  const common = commonOptions(s, run);
  const workers = Number(f.workers);
  if (!(Number.isInteger(workers) && workers >= 1)) throw invalidInput(`--workers must be an integer >= 1 (got ${f.workers})`, '--workers');
  const evaluated = await evaluate(s, run, common, workers, base.uri);
  const failedRuns = evaluated.failedRuns;
  let result = evaluated.result;
  // A report says what the runs trained with (TRAIN_* from the environment included) and what eval changed of it.
  const { settings } = run.plan;
  result = { ...result, learner: learnerReport(run.plan) };
  if (served.kind === 'llama') {
    const { klCoef, rewardBaseline, rewardBaselinePrior, opdAdvantage, pleasedDamping, opdOnBase } = settings;
    result = { ...result, step: { klCoef, rewardBaseline, rewardBaselinePrior, opdAdvantage, pleasedDamping, opdOnBase } };
  }
  const out = resolve(f.out);
  const written = await writeReports(result, out);
  if (written.pngSkipped) s.progress(`no PNG curves: ${written.pngSkipped}`);
  // The dashboard's eval panel shows the latest result.
  const latest = join(s.config.home, 'eval', 'latest.json');
  await mkdir(dirname(latest), { recursive: true });
  await writeFile(latest, JSON.stringify(toResultJson(result)) + '\n');
  const output = evalOutput(result, written, f.json);
  if (failedRuns.length === 0) return { output };
  const error = new TurnstreamError(
    ErrorCodes.INTERNAL,
    `${failedRuns.length} of ${failedRuns.length + result.runs.length} eval runs failed: ${failedRuns.join(', ')} (their errors are above; the report in ${out} joins the runs that finished)`,
  );
  return { output, error };
}

/** The runs, where they run: in `workers` child processes, through the pipeline, or in this process. */
async function evaluate(
  s: EvalCommandSettings,
  run: PreparedRun,
  common: CommonOptions,
  workers: number,
  baseUri: string,
): Promise<{ result: EvalResult; failedRuns: string[] }> {
  if (workers > 1 && !run.onlySeed && run.personas.length * common.seeds > 1) return evaluateInWorkers(s, run, common, workers);
  const result = run.f.pipeline ? await evaluateInPipeline(s, run, common) : await evaluateInProcess(s, run, common, baseUri);
  return { result, failedRuns: [] };
}

/** `--workers N`: the runs in child processes, joined; throws when every run failed. */
async function evaluateInWorkers(
  s: EvalCommandSettings,
  run: PreparedRun,
  common: CommonOptions,
  workers: number,
): Promise<{ result: EvalResult; failedRuns: string[] }> {
  const joined = await runInWorkers(s.commandLine, run.personas, common.seeds, workers, resolve(run.f.out));
  if (!joined.result)
    throw new TurnstreamError(
      ErrorCodes.INTERNAL,
      `all ${joined.failed.length} eval runs failed: ${joined.failed.join(', ')} (their errors are above)`,
    );
  return { result: joined.result, failedRuns: joined.failed };
}

/** `--pipeline`: through the gateway and the Kafka pipeline of the configured (or local) stack. */
async function evaluateInPipeline(s: EvalCommandSettings, run: PreparedRun, common: CommonOptions): Promise<EvalResult> {
  const { config } = s;
  const { f, served } = run;
  const endpoints = stackEndpoints(config);
  return runPipelineEval({
    ...common,
    // `--lr` only: unset, the runs take the configured learner's (the plan's, reported as `lr`).
    lr: run.learner.lr,
    loraLastLayers: run.learner.loraLastLayers,
    settings: config,
    evalEvery: Number(f.evalEvery),
    brokers: parseBrokers(endpoints.brokers),
    registryUrl: endpoints.registryUrl,
    baseWeightsDir: config.weightsDir,
    ...(served.kind === 'llama'
      ? {
          llama: {
            model: { name: served.name, path: served.path, sha256: served.sha256 },
            systemPrompt: served.systemPrompt,
            temperature: Number(f.temperature),
            maxTokens: Number(f.maxTokens),
          },
        }
      : {}),
  });
}

/** In-process: the pipeline's judge, sample builder and learner step, called directly. */
async function evaluateInProcess(s: EvalCommandSettings, run: PreparedRun, common: CommonOptions, baseUri: string): Promise<EvalResult> {
  const models = await openEvalModels(s.config, run.served, baseUri, run.f, run.plan);
  try {
    return await runEval({ ...common, models, evalEvery: Number(run.f.evalEvery) });
  } finally {
    await models.close();
  }
}
