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
 * On a GGUF model a run is the in-process run of the same (persona, seed) sent through the wire:
 * the same prompts and reactions (`runRandom`), the same sampling seeds sent with each request, a
 * version per `batchSize` interactions. So the two modes differ only by what the transport does.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway } from '../gateway/index.ts';
import { createEmbeddedJudge, loadTeacher, startJudge, startSampleBuilder, startSessionAssembler } from '../processors/index.ts';
import { createEventCodecs, createKafka, ensureTopics, type ConnectionSecurity, type ProcessorHandle } from '../streams/index.ts';
import { createLogger, type Logger } from '../core/index.ts';
import {
  familyStepOptions,
  familyStepSettings,
  LEARNER_LR,
  LORA_LR,
  LoraLineage,
  startLearner,
  type LearnerHandle,
  type LearnerOptions,
} from '../trainer/index.ts';
import { loadTfLlama, type LoraConfig } from '../policy/index.ts';
import { openingMessages, splitPrompts, type Persona } from './persona.ts';
import { evalSettings, type EvalSettings } from './eval-settings.ts';
import { evalGatewayClient, type ChatSampling, type EvalGatewayClient } from './pipeline-client.ts';
import { EVAL_SAMPLING, sampleSeed } from './eval-model.ts';
import { react } from './reaction.ts';
import {
  heldOutReply,
  heldOutSeed,
  runRandom,
  shares,
  summarize,
  type EvalOptions,
  type EvalResult,
  type HeldOutReply,
  type Interaction,
  type RunResult,
} from './run-eval.ts';

export interface PipelineEvalOptions extends Omit<EvalOptions, 'models' | 'seeds' | 'lr'> {
  brokers: string[];
  registryUrl: string;
  /** TLS and logins of Kafka and the registry. @default plaintext, no login */
  security?: ConnectionSecurity;
  /** A weight store holding the base checkpoint as `<baseModelId>/v0`. */
  baseWeightsDir: string;
  /** @default 'turnstream-tiny' */
  baseModelId?: string;
  /** @default 1 */
  seeds?: number;
  /** @default LORA_LR with `llama`, else LEARNER_LR */
  lr?: number;
  /** Run only this seed of `seeds`. */
  onlySeed?: number;
  /** A GGUF model served by llama.cpp and trained as LoRA versions instead of the built-in model. */
  llama?: {
    model: { name: string; path: string; sha256: string };
    systemPrompt?: string;
    lora?: Partial<LoraConfig>;
    /** Largest KL of one step (the learner's guard). */
    maxKl?: number;
    /** Weight of the KL penalty to the base model in the loss. @default LORA_STEP_DEFAULTS.klCoef */
    klCoef?: number;
    /** Measure the OPD hint on the frozen base (`TRAIN_OPD_ON_BASE`). @default false */
    opdOnBase?: boolean;
    /** `TRAIN_OPD_ADVANTAGE`. @default LORA_STEP_DEFAULTS.opdAdvantage */
    opdAdvantage?: 'raw' | 'centered' | 'positive' | 'distribution';
    /** The learner's reward baseline decay (`TRAIN_REWARD_BASELINE`); 0: off. @default LORA_STEP_DEFAULTS.rewardBaseline */
    rewardBaseline?: number;
    /** Its prior (`TRAIN_REWARD_BASELINE_PRIOR`). @default LORA_STEP_DEFAULTS.rewardBaselinePrior */
    rewardBaselinePrior?: number;
    /** `TRAIN_PLEASED_DAMPING`. @default LORA_STEP_DEFAULTS.pleasedDamping */
    pleasedDamping?: number;
    /** @default EVAL_SAMPLING.temperature */
    temperature?: number;
    /** @default EVAL_SAMPLING.maxTokens */
    maxTokens?: number;
  };
}

/** What every run of one pipeline eval shares: the settings, Kafka under a fresh prefix, the weight store, the sampling. */
interface PipelineContext {
  opts: PipelineEvalOptions;
  o: EvalSettings;
  evalEvery: number;
  logger: Logger;
  naming: { prefix: string };
  /** What every service takes. */
  common: { kafka: ReturnType<typeof createKafka>; codecs: Awaited<ReturnType<typeof createEventCodecs>>; logger: Logger };
  /** The eval's own weight store (removed at the end). */
  weightsDir: string;
  baseModelId: string;
  llama: PipelineEvalOptions['llama'];
  sampling: ChatSampling;
  /** A call whose reply is not needed: the session's end, a probe for the served version. */
  oneToken: ChatSampling;
  /** The base in tfjs, loaded once for every run's learner (GGUF models). */
  baseTf: Awaited<ReturnType<typeof loadTfLlama>> | undefined;
}

export async function runPipelineEval(opts: PipelineEvalOptions): Promise<EvalResult> {
  const t0 = Date.now();
  const ctx = await openPipeline(opts);
  const services: ProcessorHandle[] = [];
  const tally = { agree: 0, total: 0 };
  const runs: RunResult[] = [];
  try {
    await startProcessors(ctx, services);
    for (const seed of ctx.o.seedList) {
      for (const persona of ctx.o.personas) runs.push(await runOne(ctx, persona, seed));
    }
  } finally {
    for (const s of services) await s.stop().catch(() => undefined);
    ctx.baseTf?.model.dispose();
    await rm(ctx.weightsDir, { recursive: true, force: true });
  }
  const result = summarize(runs, ctx.o, tally, 'pipeline', (Date.now() - t0) / 1000);
  return result;
}

/** The topics under a fresh prefix, the codecs, a weight store holding the base, the sampling and the base in tfjs. */
async function openPipeline(opts: PipelineEvalOptions): Promise<PipelineContext> {
  const o = evalSettings(opts, { seeds: 1, lr: opts.llama ? LORA_LR : LEARNER_LR });
  const logger = createLogger('eval-pipeline', 'warn');
  // Workers start side by side: the time alone would not keep their topics apart.
  const prefix = `eval-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}.`;
  const naming = { prefix };
  const kafka = createKafka({
    brokers: opts.brokers,
    clientId: 'turnstream-eval',
    logger: createLogger('kafka', 'error'),
    security: opts.security?.kafka,
  });
  await ensureTopics(kafka, { naming });
  const codecs = await createEventCodecs({ registryUrl: opts.registryUrl, registrySecurity: opts.security?.registry, naming });
  const weightsDir = await mkdtemp(join(tmpdir(), 'turnstream-eval-'));
  const baseModelId = opts.baseModelId ?? 'turnstream-tiny';
  const llama = opts.llama;
  if (!llama) await cp(join(opts.baseWeightsDir, baseModelId, 'v0'), join(weightsDir, baseModelId, 'v0'), { recursive: true });
  const sampling = llama
    ? {
        maxTokens: llama.maxTokens ?? EVAL_SAMPLING.maxTokens,
        temperature: llama.temperature ?? EVAL_SAMPLING.temperature,
        topP: EVAL_SAMPLING.topP,
      }
    : { maxTokens: 120, temperature: 1 };
  const oneToken = { ...sampling, maxTokens: 1 };
  // The base in tfjs, loaded once for every run's learner.
  const baseTf = llama ? await loadTfLlama(llama.model.path) : undefined;
  return {
    opts,
    o,
    evalEvery: opts.evalEvery ?? 1,
    logger,
    naming,
    common: { kafka, codecs, logger },
    weightsDir,
    baseModelId,
    llama,
    sampling,
    oneToken,
    baseTf,
  };
}

/** The processors every run shares: the session assembler, the embedded judge and the sample builder (frozen base teacher). */
async function startProcessors(ctx: PipelineContext, services: ProcessorHandle[]): Promise<void> {
  const { common, o, llama, weightsDir } = ctx;
  services.push(await startSessionAssembler({ ...common, idleTimeoutMs: 3_600_000, endPolicy: 'drop' }));
  services.push(await startJudge({ ...common, judge: createEmbeddedJudge({ mode: o.method }) }));
  const teacher =
    o.method === 'rl'
      ? undefined
      : await loadTeacher(
          llama
            ? { weightsDir, llama: { model: { name: llama.model.name, path: llama.model.path }, systemPrompt: llama.systemPrompt } }
            : { weightsDir, modelId: ctx.baseModelId },
        );
  services.push(await startSampleBuilder({ ...common, method: o.method, teacher }));
}

/** A run's gateway: the built-in model's copy, or the GGUF model on llama.cpp with the run's LoRA versions. */
function startRunGateway(ctx: PipelineContext, modelId: string, home: string): ReturnType<typeof createGateway> {
  const { llama, weightsDir, logger } = ctx;
  return createGateway({
    port: 0,
    home,
    logger,
    ...(llama
      ? {
          llama: {
            model: { ...llama.model, modelId },
            weightsDir,
            contextSize: 1024,
            parallel: 2,
            threads: 1,
            systemPrompt: llama.systemPrompt,
            maxPinned: 0,
          },
        }
      : { builtin: { weightsDir, modelId, initIfEmpty: false } }),
    kafka: { brokers: ctx.opts.brokers, registryUrl: ctx.opts.registryUrl, security: ctx.opts.security, naming: ctx.naming },
  });
}

/** A run's learner, on its own model id (a LoRA lineage of its own on a GGUF model). */
async function startRunLearner(ctx: PipelineContext, modelId: string): Promise<LearnerHandle> {
  const { llama, weightsDir, o } = ctx;
  const lineage = llama
    ? new LoraLineage({
        weightsDir,
        modelId,
        base: llama.model,
        lora: llama.lora,
        maxTrainTokens: 512,
        baseTf: ctx.baseTf,
        logger: ctx.logger,
      })
    : undefined;
  const step: LearnerOptions['step'] = llama
    ? {
        maxKl: llama.maxKl,
        ...familyStepOptions(familyStepSettings(true, llama)),
        opdOnReference: llama.opdOnBase ?? false,
        mismatchTis: true,
      }
    : undefined;
  const learner = await startLearner({
    ...ctx.common,
    weightsDir,
    modelId,
    lineage,
    // A version per block of `batchSize` interactions, as in-process: without `minSamples` a
    // sample that waited 4 s behind a slow generation trained alone, and the run's cadence
    // (14–21 versions in 24 interactions) followed the machine's load.
    batch: { batchSize: o.batchSize, minSamples: o.batchSize, maxWaitMs: 4000, maxUserShare: 1, maxStaleness: 1000 },
    optimizer: { lr: o.lr },
    ...(step ? { step } : {}),
  });
  await learner.ready;
  return learner;
}

/** One (persona, seed) run: its gateway and learner, the held-out score at version 0, the interactions, a score per scored version. */
async function runOne(ctx: PipelineContext, persona: Persona, seed: number): Promise<RunResult> {
  const { o, llama } = ctx;
  const { train, heldOut } = splitPrompts(persona, { heldOut: o.heldOut });
  const modelId = `eval-${persona.name}-s${seed}`;
  if (!llama) await cp(join(ctx.weightsDir, ctx.baseModelId, 'v0'), join(ctx.weightsDir, modelId, 'v0'), { recursive: true });
  const home = await mkdtemp(join(tmpdir(), 'turnstream-eval-gw-'));
  const gw = startRunGateway(ctx, modelId, home);
  const api = evalGatewayClient(await gw.start(), ctx.logger);
  const learner = await startRunLearner(ctx, modelId);
  const rand = runRandom(persona, seed);
  const scorer = heldOutScorer(ctx, api, persona, seed, modelId, heldOut);
  let satisfied = 0;
  let steps = 0;
  const talk: Interaction[] = [];
  try {
    await scorer.score(0);
    for (let i = 0; i < o.interactions; i++) {
      const t = await interact(ctx, api, persona, `${modelId}-i${i}`, train, rand);
      if (t.satisfied) satisfied++;
      talk.push(t);
      const last = i === o.interactions - 1;
      if ((i + 1) % o.batchSize === 0 || last) {
        await awaitNextVersion(ctx, api, learner, modelId, i + 1);
        steps++;
        if (steps % ctx.evalEvery === 0 || last) await scorer.score(i + 1);
      }
    }
  } finally {
    await learner.stop();
    await gw.stop();
    await rm(home, { recursive: true, force: true });
  }
  const { scores, replies } = scorer;
  ctx.opts.onProgress?.(
    `${modelId}: ${scores.map((s) => `v${s.version} ${s.satisfaction.toFixed(2)}`).join(' → ')} (satisfied during interactions: ${satisfied}/${o.interactions})`,
  );
  return {
    persona: persona.name,
    preference: persona.preference,
    seed,
    scores,
    replies,
    talk,
    trainSatisfaction: satisfied / o.interactions,
    samples: learner.stats().trained,
    steps: [],
  };
}

/** Scores the held-out prompts as `side` turns (recorded, never trained); keeps the first and the last scored replies. */
function heldOutScorer(ctx: PipelineContext, api: EvalGatewayClient, persona: Persona, seed: number, modelId: string, heldOut: string[]) {
  const scores: RunResult['scores'] = [];
  const replies = { first: [] as HeldOutReply[], last: [] as HeldOutReply[] };
  const score = async (interactions: number): Promise<void> => {
    const scored = interactions === 0 ? replies.first : (replies.last = []);
    let version = -1;
    for (const [j, prompt] of heldOut.entries()) {
      for (let r = 0; r < ctx.o.heldOutSamples; r++) {
        const res = await api.chat(
          openingMessages(persona, prompt),
          {
            'x-turn-type': 'side',
            'x-user-id': 'eval-scorer',
            'x-session-id': `${modelId}-heldout-${interactions}-${j}-${r}`,
          },
          { ...ctx.sampling, seed: sampleSeed(heldOutSeed(seed, j), r) },
        );
        version = res.version;
        scored.push(heldOutReply(persona, prompt, res.text));
      }
    }
    scores.push({ version, interactions, ...shares(scored) });
  };
  return { scores, replies, score };
}

/** One interaction: a training prompt, the reply, the persona's reaction (and now and then a 👍/👎), the session closed. */
async function interact(
  ctx: PipelineContext,
  api: EvalGatewayClient,
  persona: Persona,
  session: string,
  train: string[],
  rand: () => number,
): Promise<Interaction> {
  const headers = { 'x-session-id': session, 'x-user-id': persona.name };
  const question = train[Math.floor(rand() * train.length)];
  const opening = openingMessages(persona, question);
  // Drawn in the in-process order (prompt, reply seed, reaction): the same user in both modes.
  const replySeed = Math.floor(rand() * 2 ** 31);
  const first = await api.chat(opening, headers, { ...ctx.sampling, seed: sampleSeed(replySeed, 0) });
  const reaction = react(persona, first.text, rand, undefined, question);
  if (reaction.rating !== null) await api.feedback(headers, { turnId: first.turnId, sessionId: session, rating: reaction.rating });
  await api.chat(
    [...opening, { role: 'assistant', content: first.text }, { role: 'user', content: reaction.text }],
    { ...headers, 'x-session-done': 'yes' },
    ctx.oneToken,
  );
  return { prompt: question, reply: first.text, reaction: reaction.text, satisfied: reaction.satisfied, version: first.version };
}

/** Waits for the learner to publish from this block, then for the gateway to serve it (a warning when none came before the deadline). */
async function awaitNextVersion(
  ctx: PipelineContext,
  api: EvalGatewayClient,
  learner: LearnerHandle,
  modelId: string,
  interactions: number,
): Promise<void> {
  const before = learner.stats().version;
  // A LoRA step on the real model takes seconds per sample on a CPU.
  const deadline = Date.now() + (ctx.llama ? 600_000 : 90_000);
  while (learner.stats().version === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  if (learner.stats().version === before) {
    ctx.logger.warn({ model: modelId, interactions, ...learner.stats() }, 'no version from this block before the deadline');
  }
  const want = learner.stats().version;
  while (Date.now() < deadline) {
    const probe = await api.chat(
      [{ role: 'user', content: 'hi' }],
      { 'x-turn-type': 'side', 'x-session-id': `${modelId}-probe` },
      ctx.oneToken,
    );
    if (probe.version >= want) break;
    await new Promise((r) => setTimeout(r, 250));
  }
}
