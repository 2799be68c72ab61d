/**
 * `turnstream eval`: simulated users with hidden preferences talk to the model; the score is the
 * share of replies to held-out prompts that satisfy them, per weight version, over several seeds
 * (eval/). In-process by default (the pipeline's judge, sample builder and learner step,
 * called directly); `--pipeline` sends the personas through the gateway and the Kafka pipeline.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { endpointsOf, resolveStackOptions } from '../../infra/index.ts';
import { createLogger, ErrorCodes, invalidInput, parseBrokers, TurnstreamError } from '../../streams/index.ts';
import { initCheckpoint, loadPolicy, selectBackend, type BackendName, type LoraConfig } from '../../policy/index.ts';
import { familyStepOptions, familyStepSettings, LEARNER_LR, LORA_LR, LORA_MAX_KL } from '../../trainer/index.ts';
import { builtinEvalModels, llamaEvalModels, type EvalModels } from '../../eval/eval-model.ts';
import { BUILTIN_PERSONAS_FILE, DEFAULT_PERSONAS_FILE, loadPersonas, type Persona } from '../../eval/persona.ts';
import { toResultJson, writeReports } from '../../eval/report.ts';
import { runPipelineEval } from '../../eval/pipeline.ts';
import { runMultiUserEval } from '../../eval/multi-user.ts';
import { mergeResults, runEval, type EvalResult } from '../../eval/run-eval.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';
import { servedModel, type ServedModel } from '../served-model.ts';
import { endAtOnceOnSignals } from '../exit-on-error.ts';

export interface EvalFlags {
  personas?: string;
  interactions: string;
  seeds: string;
  json?: boolean;
  method: string;
  batchSize: string;
  lr?: string;
  heldOut: string;
  heldOutSamples: string;
  evalEvery: string;
  out: string;
  only?: string;
  backend?: string;
  pipeline?: boolean;
  users?: string;
  adversaryRate: string;
  maxUserShare: string;
  sharedRate: string;
  model?: string;
  quick?: boolean;
  workers: string;
  seed?: string;
  maxTokens: string;
  temperature: string;
  loraLastLayers?: string;
}

const loraOf = (config: TurnstreamConfig, f: EvalFlags): Partial<LoraConfig> => ({
  rank: config.train.loraRank,
  alpha: config.train.loraAlpha,
  targets: config.train.loraTargets as LoraConfig['targets'],
  lastLayers: f.loraLastLayers ? Number(f.loraLastLayers) : config.train.loraLastLayers,
});

/**
 * `--workers N`: the (persona, seed) runs shared out over N child processes of this very command,
 * one run per child (`--only NAME --seed K`), a new child as soon as one finishes; their eval.json
 * files are joined into one result. A child's logs go to this command's stderr.
 */
async function runInWorkers(
  personas: Persona[],
  seeds: number,
  n: number,
  out: string,
): Promise<{ result?: EvalResult; failed: string[] }> {
  // Each run's report stays under <out>/runs, so a run that fails costs only itself.
  const dir = join(out, 'runs');
  const own = new Set(['--only', '--out', '--workers', '--seed', '--seeds']);
  const args: string[] = [];
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const name = a.split('=')[0];
    if (own.has(name)) {
      if (!a.includes('=')) i++;
      continue;
    }
    if (a === '--json') continue;
    args.push(a);
  }
  const units = Array.from({ length: seeds }, (_, s) => personas.map((p) => ({ persona: p.name, seed: s + 1 }))).flat();
  const t0 = Date.now();
  const parts: EvalResult[] = [];
  const failed: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < units.length) {
      const u = units[next++];
      const runOut = join(dir, `${u.persona}-s${u.seed}`);
      // --json: the child's logs go to stderr (inherited here); its one-line result is not needed.
      const child = spawn(
        process.execPath,
        [
          process.argv[1],
          ...args,
          '--json',
          '--only',
          u.persona,
          '--seeds',
          String(seeds),
          '--seed',
          String(u.seed),
          '--out',
          runOut,
          '--workers',
          '1',
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) => child.once('exit', (c, s) => r([c, s])));
      if (code === 0) parts.push(JSON.parse(await readFile(join(runOut, 'eval.json'), 'utf8')) as EvalResult);
      else failed.push(`${u.persona} seed ${u.seed} (${signal ? `killed by ${signal}` : `exit ${code}`})`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, units.length) }, worker));
  if (parts.length === 0) return { failed };
  // The runs overlap: the eval's wall time is this command's, not the sum or the longest run.
  const result = { ...mergeResults(parts, personas), seconds: (Date.now() - t0) / 1000 };
  // A run that failed costs only itself: the report joins the others and names it.
  return { result: failed.length ? { ...result, failed_runs: failed } : result, failed };
}

/** The model side of in-process runs: the served GGUF model as LoRA versions, or the built-in model. */
async function openEvalModels(
  config: TurnstreamConfig,
  served: ServedModel,
  baseUri: string,
  f: EvalFlags,
  lr: number | undefined,
): Promise<EvalModels> {
  const sampling = { temperature: Number(f.temperature), maxTokens: Number(f.maxTokens) };
  if (served.kind === 'builtin') {
    // The frozen base is the OPD teacher of the in-process loop (the pipeline's sample builder loads its own).
    const teacherPolicy = await loadPolicy({ weightsDir: config.weightsDir, version: 0 });
    const models = builtinEvalModels({ baseUri, teacherPolicy, lr: lr ?? LEARNER_LR });
    return { open: (id) => models.open(id), close: async () => teacherPolicy.dispose() };
  }
  const dir = await mkdtemp(join(tmpdir(), 'turnstream-eval-'));
  const models = await llamaEvalModels({
    model: { name: served.name, path: served.path, sha256: served.sha256 },
    dir,
    systemPrompt: served.systemPrompt,
    sampling,
    lora: loraOf(config, f),
    lr: lr ?? LORA_LR,
    step: {
      maxKl: config.train.maxKl ?? LORA_MAX_KL,
      ...familyStepOptions(familyStepSettings(true, config.train)),
      opdOnReference: config.train.opdOnBase,
      mismatchTis: config.train.mismatchTis,
    },
    maxTrainTokens: Math.min(config.train.maxTrainTokens, 512),
  });
  return {
    open: (id) => models.open(id),
    close: async () => {
      await models.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export function register(program: Command): void {
  program
    .command('eval')
    .description('simulated users with hidden preferences: held-out satisfaction per weight version')
    .option(
      '--personas <file>',
      `personas JSON (default ${relative(process.cwd(), BUILTIN_PERSONAS_FILE)}; the real model's: ${relative(process.cwd(), DEFAULT_PERSONAS_FILE)})`,
    )
    .option('--interactions <n>', 'interactions per persona (24 on a GGUF model)', '36')
    .option('--seeds <k>', 'seeds per persona', '3')
    .option('--json', 'print one JSON object')
    .option('--method <m>', 'combined | rl | opd', 'combined')
    .option('--batch-size <n>', 'interactions per learner step (2 for a GGUF model; samples per step with --users: default 8)', '4')
    .option('--lr <x>', `learning rate (default ${LEARNER_LR})`)
    .option('--held-out <share>', "share of each persona's prompts held out, never trained on", '0.375')
    .option('--held-out-samples <n>', 'sampled replies per held-out prompt and version', '4')
    .option('--eval-every <n>', 'score every n-th version, first and last always (3 on a GGUF model)', '1')
    .option('--only <names>', 'comma-separated persona names')
    .option('--out <dir>', 'folder for eval.csv, eval.json, eval.svg and curves/<persona>.svg (and .png)', '.turnstream/eval')
    .option('--backend <name>', 'force a tfjs backend')
    .option('--model <spec>', 'the model to train, as TURNSTREAM_MODEL (default: the served model)')
    .option(
      '--quick',
      'a few-minute subset: 2 personas (twosentence-tia and concise-carl when the file has them, else its first two), 1 seed, 12 interactions (8 on the built-in model), 2 samples per held-out prompt',
    )
    .option('--max-tokens <n>', 'longest reply of the real model', '96')
    .option('--temperature <t>', 'sampling temperature of the real model', '0.7')
    .option('--lora-last-layers <n>', 'adapt only the last n layers (default TRAIN_LORA_LAST_LAYERS)')
    .option('--workers <n>', 'run the (persona, seed) runs in n processes side by side, one report (2 on a GGUF model with 2+ cores)', '1')
    .option('--seed <k>', 'run only seed k of --seeds (how --workers shares out the runs)')
    .option('--pipeline', 'go through the gateway and the Kafka pipeline (needs the stack)')
    .option(
      '--users <k>',
      'many users, one model: k users sharing the preference of --only NAME (default curious-quinn, on a GGUF model concise-carl) + 1 adversary, consensus on vs off (ALGORITHMS.md §7)',
    )
    .option('--adversary-rate <n>', 'with --users: how many times as often as each other user the adversary talks', '1')
    .option('--max-user-share <x>', "with --users: the batcher's per-user cap", '0.25')
    .option('--shared-rate <p>', 'with --users: probability that one other user also reacts to a reply (shared thread)', '0')
    .action(async (f: EvalFlags, cmd: Command) => {
      // Results are written at the end: Ctrl-C has nothing to save and should not wait for tfjs.
      endAtOnceOnSignals();
      const config = loadConfig();
      // stdout carries only the result (one JSON object with --json): progress and logs go to stderr.
      const logger = createLogger('eval', 'warn');
      if (!['combined', 'rl', 'opd'].includes(f.method))
        throw invalidInput(`--method must be combined, rl or opd (got ${f.method})`, '--method');
      const heldOut = Number(f.heldOut);
      if (!(heldOut > 0 && heldOut < 1)) throw invalidInput(`--held-out must be a share between 0 and 1 (got ${f.heldOut})`, '--held-out');
      // The persona file is checked before tfjs loads: a bad file is one line, nothing else.
      const builtin = (f.model ?? config.model.spec).trim() === 'builtin';
      const given = (name: string) => cmd.getOptionValueSource(name) !== 'default';
      applyRunDefaults(f, builtin, given, availableParallelism());
      const onlySeed = f.seed === undefined ? undefined : Number(f.seed);
      if (onlySeed !== undefined && !(Number.isInteger(onlySeed) && onlySeed >= 1 && onlySeed <= Number(f.seeds)))
        throw invalidInput(`--seed must be an integer from 1 to --seeds (got ${f.seed})`, '--seed');
      // A LoRA step per 2 interactions learned fastest (docs/learning.md); the built-in model keeps 4.
      if (!builtin && !given('batchSize')) f.batchSize = '2';
      let personas = f.users ? [] : await selectPersonas(f, builtin ? BUILTIN_PERSONAS_FILE : DEFAULT_PERSONAS_FILE);
      if (f.quick && !f.only) personas = quickPersonas(personas);
      else if (!builtin && !f.only && !f.personas && !f.users) personas = pick(personas, STANDARD_PERSONAS);
      // With --users: the preference the users share, --only NAME of --personas, else the default of the model kind.
      const shared = f.users && f.only ? await selectPersonas(f, builtin ? BUILTIN_PERSONAS_FILE : DEFAULT_PERSONAS_FILE) : null;
      if (shared && shared.length !== 1)
        throw invalidInput('--users takes one persona in --only (the preference the users share)', '--only');
      const served = await servedModel(config, { spec: f.model, logger });
      const backend = await selectBackend(f.backend as BackendName | undefined, { logger });
      process.stderr.write(`eval: tfjs backend ${backend}${f.backend ? ' (forced)' : ' (auto)'}\n`);
      if (f.users) {
        const base = served.kind === 'builtin' ? await initCheckpoint(config.weightsDir) : { uri: '' };
        const lr = f.lr ? Number(f.lr) : served.kind === 'builtin' ? LEARNER_LR : LORA_LR;
        const persona =
          shared?.[0] ?? (builtin ? undefined : (await loadPersonas(DEFAULT_PERSONAS_FILE)).find((p) => p.name === 'concise-carl'));
        const models = await openEvalModels(config, served, base.uri, f, lr);
        const res = await runMultiUserEval({
          models,
          persona,
          users: Number(f.users),
          interactions: Number(f.interactions),
          seeds: Number(f.seeds),
          adversaryRate: Number(f.adversaryRate),
          maxUserShare: Number(f.maxUserShare),
          sharedRate: Number(f.sharedRate),
          batchSize: given('batchSize') ? Number(f.batchSize) : 8,
          method: f.method as 'combined' | 'rl' | 'opd',
          lr,
          heldOut,
          heldOutSamples: Number(f.heldOutSamples),
          onProgress: (line) => process.stderr.write(`eval: ${line}\n`),
        }).finally(() => models.close());
        const out = resolve(f.out);
        await mkdir(out, { recursive: true });
        await writeFile(join(out, 'eval-users.json'), JSON.stringify(res, null, 2) + '\n');
        if (f.json) {
          const { runs, ...summary } = res;
          process.stdout.write(
            JSON.stringify({
              ...summary,
              runs: runs.map(({ users: _users, conflicts, ...r }) => ({ ...r, conflicts: conflicts.length })),
            }) + '\n',
          );
        } else {
          const b = res.baseline_no_consensus;
          process.stdout.write(
            `${res.users} users (${res.persona}: "${res.preference}") + ${res.adversaries} adversary, ${res.interactions} interactions each, ${res.seeds} seeds\n` +
              `consensus on : held-out ${res.before.toFixed(3)} → ${res.after.toFixed(3)}, adversary share ${res.adversary_share.toFixed(3)} (cap ${res.maxUserShare}), weight ${res.adversary_weight.toFixed(3)} (others ${res.others_weight.toFixed(3)}), loss-weight share ${res.adversary_weight_share.toFixed(3)}\n` +
              `consensus off: held-out ${b.before.toFixed(3)} → ${b.after.toFixed(3)}, adversary share ${b.adversary_share.toFixed(3)}, weight ${b.adversary_weight.toFixed(3)}, loss-weight share ${b.adversary_weight_share.toFixed(3)}\n` +
              `wrote ${join(out, 'eval-users.json')} (${Math.round(res.seconds)} s)\n`,
          );
        }
        return;
      }
      // Every run starts from the base: the served model's version 0 (for the built-in model the store's, the shipped base when it had none).
      const base = served.kind === 'builtin' ? await initCheckpoint(config.weightsDir) : { uri: '' };
      const common = {
        personas,
        interactions: Number(f.interactions),
        seeds: Number(f.seeds),
        method: f.method as 'combined' | 'rl' | 'opd',
        batchSize: Number(f.batchSize),
        lr: f.lr ? Number(f.lr) : served.kind === 'builtin' ? LEARNER_LR : LORA_LR,
        heldOut,
        heldOutSamples: Number(f.heldOutSamples),
        onlySeed,
        onProgress: (line: string) => process.stderr.write(`eval: ${line}\n`),
      };
      let result: EvalResult;
      let failedRuns: string[] = [];
      const workers = Number(f.workers);
      if (!(Number.isInteger(workers) && workers >= 1))
        throw invalidInput(`--workers must be an integer >= 1 (got ${f.workers})`, '--workers');
      if (workers > 1 && !onlySeed && personas.length * common.seeds > 1) {
        const joined = await runInWorkers(personas, common.seeds, workers, resolve(f.out));
        failedRuns = joined.failed;
        if (!joined.result)
          throw new TurnstreamError(
            ErrorCodes.INTERNAL,
            `all ${failedRuns.length} eval runs failed: ${failedRuns.join(', ')} (their errors are above)`,
          );
        result = joined.result;
      } else if (f.pipeline) {
        const endpoints = endpointsOf(
          resolveStackOptions({ home: config.home, kafkaBrokers: config.kafkaBrokers, schemaRegistryUrl: config.schemaRegistryUrl }),
        );
        result = await runPipelineEval({
          ...common,
          evalEvery: Number(f.evalEvery),
          brokers: parseBrokers(endpoints.brokers),
          registryUrl: endpoints.registryUrl,
          baseWeightsDir: config.weightsDir,
          ...(served.kind === 'llama'
            ? {
                llama: {
                  model: { name: served.name, path: served.path, sha256: served.sha256 },
                  systemPrompt: served.systemPrompt,
                  lora: loraOf(config, f),
                  maxKl: config.train.maxKl ?? LORA_MAX_KL,
                  ...familyStepSettings(true, config.train),
                  opdOnBase: config.train.opdOnBase,
                  temperature: Number(f.temperature),
                  maxTokens: Number(f.maxTokens),
                },
              }
            : {}),
        });
      } else {
        const models = await openEvalModels(config, served, base.uri, f, common.lr);
        try {
          result = await runEval({ ...common, models, evalEvery: Number(f.evalEvery) });
        } finally {
          await models.close();
        }
      }
      // A report says what the LoRA runs trained with, TRAIN_* from the environment included.
      if (served.kind === 'llama')
        result = { ...result, step: { ...familyStepSettings(true, config.train), opdOnBase: config.train.opdOnBase } };
      const out = resolve(f.out);
      const written = await writeReports(result, out);
      if (written.pngSkipped) process.stderr.write(`eval: no PNG curves: ${written.pngSkipped}\n`);
      // The dashboard's eval panel shows the latest result.
      const latest = join(config.home, 'eval', 'latest.json');
      await mkdir(dirname(latest), { recursive: true });
      await writeFile(latest, JSON.stringify(toResultJson(result)) + '\n');
      if (f.json) {
        const { runs, ...summary } = toResultJson(result);
        process.stdout.write(
          JSON.stringify({
            ...summary,
            runs: runs.map((r) => ({
              persona: r.persona,
              seed: r.seed,
              scores: r.scores.map((s) => s.satisfaction),
              answered: r.scores.map((s) => s.answered),
              trainSatisfaction: r.trainSatisfaction,
              samples: r.samples,
            })),
          }) + '\n',
        );
      } else {
        process.stdout.write(
          `held-out satisfaction ${result.before.toFixed(3)} → ${result.after.toFixed(3)} over ${result.personas} personas × ${result.seeds} seeds, ${result.interactions} interactions each (${result.method}, ${result.mode})\n` +
            `held-out replies that answer the prompt at all: ${result.answered.before.toFixed(3)} → ${result.answered.after.toFixed(3)}\n` +
            `${result.statistic.test}: mean diff ${result.statistic.meanDiff.toFixed(3)}, t = ${result.statistic.t.toFixed(2)}, p = ${result.statistic.p.toPrecision(3)} (n = ${result.statistic.n})\n` +
            result.per_version
              .map(
                (v) =>
                  `  v${v.version} (${v.interactions} interactions): ${v.satisfaction.toFixed(3)}  ${Object.entries(v.byPersona)
                    .map(([k, x]) => `${k} ${x.toFixed(2)}`)
                    .join('  ')}`,
              )
              .join('\n') +
            `\nwrote ${written.csv}, eval.json, eval.svg, ${written.svg.length - 1} persona curves${written.png.length ? ' (SVG and PNG)' : ''} (${Math.round(result.seconds)} s)\n`,
        );
      }
      if (failedRuns.length > 0)
        throw new TurnstreamError(
          ErrorCodes.INTERNAL,
          `${failedRuns.length} of ${failedRuns.length + result.runs.length} eval runs failed: ${failedRuns.join(', ')} (their errors are above; the report in ${out} joins the runs that finished)`,
        );
    });
}

/** The shipped personas that learned fastest on SmolLM2 over 24 interactions (docs/learning.md). */
const QUICK_PERSONAS = ['twosentence-tia', 'concise-carl'];

/**
 * The real model's standard eval with the shipped file: its length and layout personas, 3 seeds ×
 * 24 interactions within an hour on 2 cores. The others (a sign-off, a tone, lists) take `--only`
 * or `--personas`; what they reach is in docs/learning.md.
 */
const STANDARD_PERSONAS = ['concise-carl', 'twosentence-tia', 'oneparagraph-pia'];

/** The named personas when the file has them all, else `fallback` (all of them by default). */
function pick(personas: Persona[], names: string[], fallback: Persona[] = personas): Persona[] {
  const found = personas.filter((p) => names.includes(p.name));
  return found.length === names.length ? found : fallback;
}

/**
 * The defaults that depend on the run: `--quick` (a few minutes) and, on the real model, the
 * standard run measured in docs/learning.md. A value given on the command line keeps its place.
 */
export function applyRunDefaults(f: EvalFlags, builtin: boolean, given: (flag: keyof EvalFlags) => boolean, cores: number): void {
  if (f.quick) {
    // 12 on the real model: its ten-seed curve is at 0.17 after 6 interactions and 0.48 after 12.
    if (!given('interactions')) f.interactions = builtin ? '8' : '12';
    if (!given('seeds')) f.seeds = '1';
    if (!given('heldOutSamples')) f.heldOutSamples = '2';
  } else if (!builtin && !f.users) {
    // The real model's standard run: within an hour on 2 cores.
    if (!given('interactions')) f.interactions = '24';
    if (!given('evalEvery')) f.evalEvery = '3';
    if (!given('workers')) f.workers = String(Math.min(2, cores));
  }
}

/** `--quick`'s two personas: the fast learners when the file has them, else its first two. */
const quickPersonas = (personas: Persona[]): Persona[] => pick(personas, QUICK_PERSONAS, personas.slice(0, 2));

/**
 * The personas of `--personas` (by default the real model's, or the built-in model's five for it),
 * narrowed to `--only`; an unknown name there is an input error that lists the known ones.
 */
async function selectPersonas(f: EvalFlags, defaultFile: string): Promise<Persona[]> {
  const personas = await loadPersonas(resolve(f.personas ?? defaultFile));
  if (!f.only) return personas;
  const wanted = f.only
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const names = personas.map((p) => p.name);
  const unknown = wanted.filter((w) => !names.includes(w));
  if (unknown.length > 0 || wanted.length === 0)
    throw invalidInput(
      `--only: ${unknown.length ? `unknown persona${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}` : 'no persona named'}; known: ${names.join(', ')}`,
      '--only',
    );
  return personas.filter((p) => wanted.includes(p.name));
}
