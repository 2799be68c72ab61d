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
import {
  createEmbeddedJudge,
  loadTeacher,
  startJudge,
  startSampleBuilder,
  startSessionAssembler,
  type TrainMethod,
} from '../processors/index.ts';
import { createEventCodecs, createKafka, createLogger, ensureTopics, type ProcessorHandle } from '../streams/index.ts';
import { ErrorCodes, retry, TurnstreamError, type Logger } from '../core/index.ts';
import { LEARNER_LR, LORA_LR, startLearner } from '../trainer/learner.ts';
import { LoraLineage } from '../trainer/policy-lineage.ts';
import { familyStepOptions, familyStepSettings } from '../trainer/step-defaults.ts';
import { loadTfLlama, type LoraConfig } from '../policy/index.ts';
import { openingMessages, splitPrompts, type Persona } from './persona.ts';
import { evalSettings } from './eval-settings.ts';
import { EVAL_SAMPLING, sampleSeed } from './eval-model.ts';
import { react } from './reaction.ts';
import {
  heldOutReply,
  heldOutSeed,
  runRandom,
  shares,
  summarize,
  type EvalResult,
  type HeldOutReply,
  type Interaction,
  type RunResult,
} from './run-eval.ts';

export interface PipelineEvalOptions {
  personas: Persona[];
  brokers: string[];
  registryUrl: string;
  /** A weight store holding the base checkpoint as `<baseModelId>/v0`. */
  baseWeightsDir: string;
  /** @default 'turnstream-tiny' */
  baseModelId?: string;
  interactions?: number;
  seeds?: number;
  method?: TrainMethod;
  batchSize?: number;
  /** @default LORA_LR with `llama`, else LEARNER_LR */
  lr?: number;
  /** Share of each persona's prompts held out. @default 3/8 */
  heldOut?: number;
  heldOutSamples?: number;
  /** Score every n-th version (the first and last always). @default 1 */
  evalEvery?: number;
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
  onProgress?: (line: string) => void;
}

interface ChatResult {
  text: string;
  turnId: string;
  version: number;
}

/** A network error's own reason (undici hides it under `cause`: a reset, a refused connection, a timeout). */
function reasonOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const msg = err instanceof Error ? err.message : String(err);
  return cause ? `${msg} (${cause.code ?? cause.message ?? String(cause)})` : msg;
}

/**
 * One call to the gateway. A dropped connection or a 429/5xx is tried again (a side turn sent twice
 * is harmless; a main turn sent twice shows up as a retried turn in its session), and every retry
 * is logged with its reason, so that a worker that does give up says why.
 */
async function chat(
  url: string,
  messages: Array<{ role: string; content: string }>,
  headers: Record<string, string>,
  sampling: { maxTokens: number; temperature: number; topP?: number; seed?: number },
  logger: Logger,
): Promise<ChatResult> {
  const body = JSON.stringify({
    messages,
    max_tokens: sampling.maxTokens,
    temperature: sampling.temperature,
    top_p: sampling.topP,
    seed: sampling.seed,
  });
  return retry(
    async () => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      if (res.status !== 200) {
        const text = await res.text();
        throw new TurnstreamError(ErrorCodes.UPSTREAM, `gateway answered ${res.status}: ${text.slice(0, 300)}`, {
          retriable: res.status === 429 || res.status >= 500,
        });
      }
      const out = (await res.json()) as { choices: Array<{ message: { content: string | null } }> };
      return {
        text: out.choices[0].message.content ?? '',
        turnId: res.headers.get('x-turn-id') ?? '',
        version: Number(res.headers.get('x-policy-version') ?? -1),
      };
    },
    {
      attempts: 4,
      baseMs: 1000,
      retryIf: (err) => (err instanceof TurnstreamError ? err.retriable : err instanceof TypeError),
      onRetry: (err, attempt) =>
        logger.warn({ session: headers['x-session-id'], attempt, reason: reasonOf(err) }, 'gateway call failed, trying again'),
    },
  ).catch((err: unknown) => {
    throw new TurnstreamError(ErrorCodes.UPSTREAM, `gateway call for ${headers['x-session-id']} failed: ${reasonOf(err)}`, {
      cause: err,
    });
  });
}

export async function runPipelineEval(opts: PipelineEvalOptions): Promise<EvalResult> {
  const t0 = Date.now();
  const o = evalSettings(opts, { seeds: 1, lr: opts.llama ? LORA_LR : LEARNER_LR });
  const evalEvery = opts.evalEvery ?? 1;
  const logger = createLogger('eval-pipeline', 'warn');
  // Workers start side by side: the time alone would not keep their topics apart.
  const prefix = `eval-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}.`;
  const naming = { prefix };
  const kafka = createKafka({ brokers: opts.brokers, clientId: 'turnstream-eval', logger: createLogger('kafka', 'error') });
  await ensureTopics(kafka, { naming });
  const codecs = await createEventCodecs({ registryUrl: opts.registryUrl, naming });
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
  const common = { kafka, codecs, logger };
  const services: ProcessorHandle[] = [];
  const tally = { agree: 0, total: 0 };
  const runs: RunResult[] = [];
  try {
    services.push(await startSessionAssembler({ ...common, idleTimeoutMs: 3_600_000, endPolicy: 'drop' }));
    services.push(await startJudge({ ...common, judge: createEmbeddedJudge({ mode: o.method }) }));
    const teacher =
      o.method === 'rl'
        ? undefined
        : await loadTeacher(
            llama
              ? { weightsDir, llama: { model: { name: llama.model.name, path: llama.model.path }, systemPrompt: llama.systemPrompt } }
              : { weightsDir, modelId: baseModelId },
          );
    services.push(await startSampleBuilder({ ...common, method: o.method, teacher }));
    for (const seed of o.seedList) {
      for (const persona of o.personas) {
        const { train, heldOut } = splitPrompts(persona, { heldOut: o.heldOut });
        const modelId = `eval-${persona.name}-s${seed}`;
        if (!llama) await cp(join(weightsDir, baseModelId, 'v0'), join(weightsDir, modelId, 'v0'), { recursive: true });
        const home = await mkdtemp(join(tmpdir(), 'turnstream-eval-gw-'));
        const gw = createGateway({
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
          kafka: { brokers: opts.brokers, registryUrl: opts.registryUrl, naming },
        });
        const url = await gw.start();
        const lineage = llama
          ? new LoraLineage({ weightsDir, modelId, base: llama.model, lora: llama.lora, maxTrainTokens: 512, baseTf, logger })
          : undefined;
        const learner = await startLearner({
          ...common,
          weightsDir,
          modelId,
          lineage,
          // A version per block of `batchSize` interactions, as in-process: without `minSamples` a
          // sample that waited 4 s behind a slow generation trained alone, and the run's cadence
          // (14–21 versions in 24 interactions) followed the machine's load.
          batch: { batchSize: o.batchSize, minSamples: o.batchSize, maxWaitMs: 4000, maxUserShare: 1, maxStaleness: 1000 },
          optimizer: { lr: o.lr },
          ...(llama
            ? {
                step: {
                  maxKl: llama.maxKl,
                  ...familyStepOptions(familyStepSettings(true, llama)),
                  opdOnReference: llama.opdOnBase ?? false,
                  mismatchTis: true,
                },
              }
            : {}),
        });
        await learner.ready;
        const rand = runRandom(persona, seed);
        const scores: RunResult['scores'] = [];
        const replies = { first: [] as HeldOutReply[], last: [] as HeldOutReply[] };
        const scoreNow = async (interactions: number): Promise<void> => {
          const scored = interactions === 0 ? replies.first : (replies.last = []);
          let version = -1;
          for (const [j, prompt] of heldOut.entries()) {
            for (let r = 0; r < o.heldOutSamples; r++) {
              const res = await chat(
                url,
                openingMessages(persona, prompt),
                {
                  'x-turn-type': 'side',
                  'x-user-id': 'eval-scorer',
                  'x-session-id': `${modelId}-heldout-${interactions}-${j}-${r}`,
                },
                { ...sampling, seed: sampleSeed(heldOutSeed(seed, j), r) },
                logger,
              );
              version = res.version;
              scored.push(heldOutReply(persona, prompt, res.text));
            }
          }
          scores.push({ version, interactions, ...shares(scored) });
        };
        let satisfied = 0;
        let steps = 0;
        const talk: Interaction[] = [];
        try {
          await scoreNow(0);
          for (let i = 0; i < o.interactions; i++) {
            const session = `${modelId}-i${i}`;
            const headers = { 'x-session-id': session, 'x-user-id': persona.name };
            const question = train[Math.floor(rand() * train.length)];
            const opening = openingMessages(persona, question);
            // Drawn in the in-process order (prompt, reply seed, reaction): the same user in both modes.
            const replySeed = Math.floor(rand() * 2 ** 31);
            const first = await chat(url, opening, headers, { ...sampling, seed: sampleSeed(replySeed, 0) }, logger);
            const reaction = react(persona, first.text, rand, undefined, question);
            if (reaction.satisfied) satisfied++;
            talk.push({
              prompt: question,
              reply: first.text,
              reaction: reaction.text,
              satisfied: reaction.satisfied,
              version: first.version,
            });
            if (reaction.rating !== null) {
              const fb = await fetch(`${url}/v1/feedback`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', ...headers },
                body: JSON.stringify({ turn_id: first.turnId, session_id: session, rating: reaction.rating }),
              });
              if (fb.status !== 201) logger.warn({ session, status: fb.status, body: await fb.text() }, 'feedback refused');
            }
            await chat(
              url,
              [...opening, { role: 'assistant', content: first.text }, { role: 'user', content: reaction.text }],
              { ...headers, 'x-session-done': 'yes' },
              oneToken,
              logger,
            );
            const last = i === o.interactions - 1;
            if ((i + 1) % o.batchSize === 0 || last) {
              // Wait for the learner to publish from this block, then for the gateway to serve it.
              const before = learner.stats().version;
              // A LoRA step on the real model takes seconds per sample on a CPU.
              const deadline = Date.now() + (llama ? 600_000 : 90_000);
              while (learner.stats().version === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
              if (learner.stats().version === before) {
                logger.warn({ model: modelId, interactions: i + 1, ...learner.stats() }, 'no version from this block before the deadline');
              }
              const want = learner.stats().version;
              while (Date.now() < deadline) {
                const probe = await chat(
                  url,
                  [{ role: 'user', content: 'hi' }],
                  { 'x-turn-type': 'side', 'x-session-id': `${modelId}-probe` },
                  oneToken,
                  logger,
                );
                if (probe.version >= want) break;
                await new Promise((r) => setTimeout(r, 250));
              }
              steps++;
              if (steps % evalEvery === 0 || last) await scoreNow(i + 1);
            }
          }
        } finally {
          await learner.stop();
          await gw.stop();
          await rm(home, { recursive: true, force: true });
        }
        opts.onProgress?.(
          `${modelId}: ${scores.map((s) => `v${s.version} ${s.satisfaction.toFixed(2)}`).join(' → ')} (satisfied during interactions: ${satisfied}/${o.interactions})`,
        );
        runs.push({
          persona: persona.name,
          preference: persona.preference,
          seed,
          scores,
          replies,
          talk,
          trainSatisfaction: satisfied / o.interactions,
          samples: learner.stats().trained,
          steps: [],
        });
      }
    }
  } finally {
    for (const s of services) await s.stop().catch(() => undefined);
    baseTf?.model.dispose();
    await rm(weightsDir, { recursive: true, force: true });
  }
  const result = summarize(runs, o, tally, 'pipeline', (Date.now() - t0) / 1000);
  return result;
}
