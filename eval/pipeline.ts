/**
 * The evaluation through the real system (`turnstream eval --pipeline`): personas talk to the
 * gateway over HTTP; turns go through Kafka, the session assembler, the embedded judge and the
 * sample builder (frozen base teacher) to the learner service, whose versions the gateway
 * hot-swaps. Held-out prompts are sent as `side` turns, so they are recorded but never trained.
 *
 * Each run (persona × seed) gets its own model id (a copy of the base checkpoint, or for a GGUF
 * model a LoRA lineage of its own served by llama.cpp), gateway and learner; the processors are
 * shared. Everything lives under a fresh topic prefix.
 *
 * The loop is the in-process one (run-eval.ts `evaluate`); this file is only its learning path
 * (eval/learning-path.ts). So on a GGUF model a run is the in-process run of the same (persona,
 * seed) sent through the wire: the same prompts and reactions, the same sampling seeds sent with
 * each request, a version per `batchSize` interactions; the two modes differ only by what the
 * transport does.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gateway } from '../gateway/index.ts';
import { createEmbeddedJudge, loadTeacher } from '../processors/index.ts';
import { createLogger, type Logger } from '../core/index.ts';
import type { LearnerHandle } from '../trainer/index.ts';
import { loadTfLlama } from '../policy/index.ts';
import {
  awaitServedVersion,
  gatewayService,
  ownGateway,
  gatewayVersionProbe,
  inProcessPipeline,
  learnerService,
  resolveSettings,
  type InProcessPipeline,
  type LearnerPlan,
  type ServedModel,
  type StackSettings,
} from '../stack/index.ts';
import type { Persona } from './persona.ts';
import { evalSettings, type EvalSettings } from './eval-settings.ts';
import { evalLearnerOverrides, evalLearnerPlan, learnerReport, type EvalLearnerOptions } from './eval-learner.ts';
import { evalGatewayClient, type ChatSampling } from './pipeline-client.ts';
import { EVAL_SAMPLING, sampleSeed } from './eval-model.ts';
import type { LearningPath, RunPath } from './learning-path.ts';
import { evaluate, EVAL_PEAK_SAMPLES, type EvalOptions, type EvalResult } from './run-eval.ts';

export interface PipelineEvalOptions extends Omit<EvalOptions, 'models' | 'seeds' | 'lr'> {
  brokers: string[];
  registryUrl: string;
  /** A weight store holding the base checkpoint as `<baseModelId>/v0`. */
  baseWeightsDir: string;
  /** @default 'turnstream-tiny' */
  baseModelId?: string;
  /**
   * The configuration the runs' gateways, processors and learners are built from (stack/), as
   * `turnstream up`'s are. @default resolveSettings(): every default
   */
  settings?: StackSettings;
  /** @default 1 */
  seeds?: number;
  /** `--lr`. @default the configured learner's (`TRAIN_LR`, else the model family's) */
  lr?: number;
  /** `--lora-last-layers`. @default the configured learner's (`TRAIN_LORA_LAST_LAYERS`) */
  loraLastLayers?: number;
  /** Run only this seed of `seeds`. */
  onlySeed?: number;
  /** A GGUF model served by llama.cpp and trained as LoRA versions instead of the built-in model. */
  llama?: {
    model: { name: string; path: string; sha256: string };
    systemPrompt?: string;
    /** @default EVAL_SAMPLING.temperature */
    temperature?: number;
    /** @default EVAL_SAMPLING.maxTokens */
    maxTokens?: number;
  };
}

/** What every run of one pipeline eval shares: the settings, Kafka under a fresh prefix, the weight store, the sampling. */
interface PipelineContext {
  opts: PipelineEvalOptions;
  settings: StackSettings;
  o: EvalSettings;
  /** What the runs change of the configured learner (eval/eval-learner.ts). */
  learner: EvalLearnerOptions;
  evalEvery: number;
  logger: Logger;
  /** The run's topics, processors and Kafka link. */
  pipeline: InProcessPipeline;
  /** The eval's own weight store (removed at the end). */
  weightsDir: string;
  baseModelId: string;
  llama: PipelineEvalOptions['llama'];
  sampling: ChatSampling;
  /** A call whose reply is not needed: the session's end. */
  oneToken: ChatSampling;
  /** The base in tfjs, loaded once for every run's learner (GGUF models). */
  baseTf: Awaited<ReturnType<typeof loadTfLlama>> | undefined;
}

/** The served model of one run: the GGUF model as the run's own lineage, or the run's copy of the built-in base. */
const servedOf = (ctx: Pick<PipelineContext, 'llama'>, modelId: string): ServedModel =>
  ctx.llama
    ? {
        kind: 'llama',
        name: ctx.llama.model.name,
        modelId,
        path: ctx.llama.model.path,
        sha256: ctx.llama.model.sha256,
        systemPrompt: ctx.llama.systemPrompt,
      }
    : { kind: 'builtin', modelId };

export async function runPipelineEval(opts: PipelineEvalOptions): Promise<EvalResult> {
  const ctx = await openPipeline(opts);
  try {
    return await evaluate(pipelinePath(ctx), {
      ...ctx.o,
      evalEvery: ctx.evalEvery,
      peakSamples: opts.peakSamples ?? EVAL_PEAK_SAMPLES,
      onProgress: opts.onProgress,
    });
  } finally {
    await ctx.pipeline.stop();
    ctx.baseTf?.model.dispose();
    await rm(ctx.weightsDir, { recursive: true, force: true });
  }
}

/** Learning through the real system: each run its own gateway and learner, the shared processors between them. */
function pipelinePath(ctx: PipelineContext): LearningPath {
  let plan: LearnerPlan | undefined;
  return {
    mode: 'pipeline',
    async open(persona, seed) {
      const run = await openRun(ctx, persona, seed);
      plan = run.plan;
      return run.path;
    },
    // The judge ran in the pipeline's judge stage; its agreement is not counted here.
    judgeAgreement: () => NaN,
    learner: () => (plan ? learnerReport(plan) : undefined),
  };
}

/**
 * The topics under a fresh prefix with the processors every run shares (the session assembler,
 * the embedded judge and the sample builder with the frozen base as teacher), a weight store
 * holding the base, the sampling and the base in tfjs.
 */
async function openPipeline(opts: PipelineEvalOptions): Promise<PipelineContext> {
  const settings = opts.settings ?? resolveSettings();
  const llama = opts.llama;
  const learner = { batchSize: opts.batchSize ?? 4, lr: opts.lr, loraLastLayers: opts.loraLastLayers };
  // The runs' learning rate (reported): `--lr`, else the configured learner's.
  const lr = evalLearnerPlan(settings, servedOf({ llama }, 'eval'), learner).settings.lr;
  const o = evalSettings({ ...opts, lr }, { seeds: 1 });
  const logger = createLogger('eval-pipeline', 'warn');
  const weightsDir = await mkdtemp(join(tmpdir(), 'turnstream-eval-'));
  const baseModelId = opts.baseModelId ?? 'turnstream-tiny';
  if (!llama) await cp(join(opts.baseWeightsDir, baseModelId, 'v0'), join(weightsDir, baseModelId, 'v0'), { recursive: true });
  const sampling = llama
    ? {
        maxTokens: llama.maxTokens ?? EVAL_SAMPLING.maxTokens,
        temperature: llama.temperature ?? EVAL_SAMPLING.temperature,
        topP: EVAL_SAMPLING.topP,
      }
    : { maxTokens: 120, temperature: 1 };
  // The base in tfjs, loaded once for every run's learner.
  const baseTf = llama ? await loadTfLlama(llama.model.path) : undefined;
  // The teacher is the frozen base: the GGUF model itself on the hinted prompt, or the built-in base checkpoint.
  const teacher =
    o.method === 'rl'
      ? null
      : await loadTeacher(
          llama
            ? { weightsDir, llama: { model: { name: llama.model.name, path: llama.model.path }, systemPrompt: llama.systemPrompt } }
            : { weightsDir, modelId: baseModelId },
        );
  const pipeline = await inProcessPipeline(settings, {
    // Workers start side by side: the time alone would not keep their topics apart.
    naming: { prefix: `eval-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}.` },
    clientId: 'turnstream-eval',
    kafkaLogger: createLogger('kafka', 'error'),
    endpoints: { brokers: opts.brokers, registryUrl: opts.registryUrl },
    served: null,
    processors: ['session-assembler', 'judge', 'sample-builder'],
    processorOverrides: {
      // A run's sessions end with its last turn, and a session's last turn trains nothing.
      session: { idleTimeoutMs: 3_600_000, endPolicy: 'drop' },
      // The persona's reaction is the judge's evidence, whatever judge the configuration names.
      judge: createEmbeddedJudge({ mode: o.method }),
      method: o.method,
      teacher,
    },
  });
  const oneToken = { ...sampling, maxTokens: 1 };
  return {
    opts,
    settings,
    o,
    learner,
    evalEvery: opts.evalEvery ?? 1,
    logger,
    pipeline,
    weightsDir,
    baseModelId,
    llama,
    sampling,
    oneToken,
    baseTf,
  };
}

/** A run's gateway, built as `turnstream gateway`'s: the built-in model's copy, or the GGUF model on llama.cpp with the run's LoRA versions. */
function startRunGateway(ctx: PipelineContext, modelId: string, home: string): Gateway {
  const { llama, weightsDir, logger, pipeline } = ctx;
  return gatewayService(ctx.settings, servedOf(ctx, modelId), {
    ...ownGateway(home, logger),
    kafka: { brokers: pipeline.link.brokers, registryUrl: pipeline.link.registryUrl, naming: pipeline.link.naming },
    ...(llama
      ? {
          // Two sequences, one thread, a 1k context: what a run's replies need, two runs side by side on 2 cores.
          admission: { maxConcurrent: 2 },
          llama: { weightsDir, contextSize: 1024, parallel: 2, threads: 1, maxPinned: 0 },
        }
      : { builtin: { weightsDir, initIfEmpty: false } }),
  });
}

/** A run's learner on its own model id (a LoRA lineage of its own on a GGUF model): the configured learner with eval's overrides. */
async function startRunLearner(ctx: PipelineContext, modelId: string): Promise<{ handle: LearnerHandle; plan: LearnerPlan }> {
  const { handle, plan } = await learnerService(ctx.settings, servedOf(ctx, modelId), ctx.pipeline.link, {
    settings: evalLearnerOverrides(ctx.learner),
    weightsDir: ctx.weightsDir,
    baseTf: ctx.baseTf,
    logger: ctx.logger,
  });
  return { handle, plan };
}

/** One (persona, seed) run: its gateway and learner on a model id of its own (a copy of the base, or a LoRA lineage of its own). */
async function openRun(ctx: PipelineContext, persona: Persona, seed: number): Promise<{ path: RunPath; plan: LearnerPlan }> {
  const modelId = `eval-${persona.name}-s${seed}`;
  if (!ctx.llama) await cp(join(ctx.weightsDir, ctx.baseModelId, 'v0'), join(ctx.weightsDir, modelId, 'v0'), { recursive: true });
  const home = await mkdtemp(join(tmpdir(), 'turnstream-eval-gw-'));
  const gw = startRunGateway(ctx, modelId, home);
  const url = await gw.start();
  const api = evalGatewayClient(url, ctx.logger);
  const { handle: learner, plan } = await startRunLearner(ctx, modelId);
  const path: RunPath = {
    runId: modelId,
    // The gateway serves `id@N` from the weight store: LoRA versions are kept there, the built-in model's are not.
    pastVersions: Boolean(ctx.llama),
    async heldOut(messages, s, n, label, pinned) {
      const texts: string[] = [];
      let version = -1;
      for (let r = 0; r < n; r++) {
        // A side turn: recorded, never trained.
        const res = await api.chat(
          messages,
          { 'x-turn-type': 'side', 'x-user-id': 'eval-scorer', 'x-session-id': `${modelId}-heldout-${label}-${r}` },
          { ...ctx.sampling, seed: sampleSeed(s, r), ...(pinned === undefined ? {} : { model: `${modelId}@${pinned}` }) },
        );
        version = res.version;
        texts.push(res.text);
      }
      return { texts, version };
    },
    async interact(i, messages, replySeed, react) {
      // The persona's reaction (and now and then a 👍/👎) goes to the gateway as the session's next turn, which closes it.
      const session = `${modelId}-i${i}`;
      const headers = { 'x-session-id': session, 'x-user-id': persona.name };
      const first = await api.chat(messages, headers, { ...ctx.sampling, seed: sampleSeed(replySeed, 0) });
      const reaction = react(first.text);
      if (reaction.rating !== null) await api.feedback(headers, { turnId: first.turnId, sessionId: session, rating: reaction.rating });
      await api.chat(
        [...messages, { role: 'assistant', content: first.text }, { role: 'user', content: reaction.text }],
        { ...headers, 'x-session-done': 'yes' },
        ctx.oneToken,
      );
      return { reply: first.text, version: first.version, reaction, judgingSeconds: 0 };
    },
    async endBlock(interactions) {
      await awaitNextVersion(ctx, url, learner, modelId, interactions);
      return null;
    },
    trained: () => learner.stats().trained,
    async close() {
      await learner.stop();
      await gw.stop();
      await rm(home, { recursive: true, force: true });
    },
  };
  return { path, plan };
}

/** Waits for the learner to publish from this block, then for the gateway to serve it (a warning when none came before the deadline). */
async function awaitNextVersion(
  ctx: PipelineContext,
  url: string,
  learner: LearnerHandle,
  modelId: string,
  interactions: number,
): Promise<void> {
  const r = await awaitServedVersion({
    learner,
    after: learner.stats().version,
    probe: gatewayVersionProbe(url, `${modelId}-probe`),
    // A LoRA step on the real model takes seconds per sample on a CPU.
    timeoutMs: ctx.llama ? 600_000 : 90_000,
  });
  if (!r.ok) ctx.logger.warn({ model: modelId, interactions, ...r, ...learner.stats() }, 'no version from this block before the deadline');
}
