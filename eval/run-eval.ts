/**
 * The evaluation loop, in-process: personas talk to the policy; each reply and the persona's
 * reaction form a TurnPair that goes through the SAME functions the Kafka pipeline runs — the
 * embedded judge (processors/judge) and the sample builder with the frozen base model as OPD
 * teacher (processors/sample-builder) — and every `batchSize` interactions the learner takes one
 * step (trainer/learner-step.ts, the learner service's step) and a new version exists. What is
 * skipped is only the transport: no gateway, no Kafka.
 *
 * Score: for each version, the share of replies to HELD-OUT prompts (prompts no interaction used)
 * that satisfy the persona's hidden preference, `heldOutSamples` sampled replies per prompt at
 * temperature 1 (as served). One run = one persona × one seed, from the base checkpoint.
 */
import { avroTypeOf, type ChatMessage as EventMessage, type Sample, type TopicId, type TurnPair } from '../schemas/index.ts';
import { buildSample, createEmbeddedJudge, makeJudgement, type TrainMethod } from '../processors/index.ts';
import { renderPrompt, type ChatMessage, type TransformerModel, ByteTokenizer } from '../policy/index.ts';
import { mulberry32 } from '../core/index.ts';
import type { StepMetrics, FamilyStepSettings } from '../trainer/index.ts';
import { openingMessages, splitPrompts, type Persona } from './persona.ts';
import { evalSettings, type EvalSettings } from './eval-settings.ts';
import type { EvalModel, EvalModels } from './eval-model.ts';
import type { EvalLearnerReport } from './eval-learner.ts';
import { isAnswer, react, satisfies } from './reaction.ts';
import { mean, pairedPermutationTest, type PairedTest } from '../measure/index.ts';

export interface EvalOptions {
  personas: Persona[];
  /** The model every run starts from (version 0) and learns on: eval/eval-model.ts. */
  models: EvalModels;
  /** Interactions per persona and seed. @default 36 */
  interactions?: number;
  /** Seeds 1..seeds. @default 3 */
  seeds?: number;
  /** @default 'combined' */
  method?: TrainMethod;
  /** Interactions per learner step. @default 4 */
  batchSize?: number;
  /** @default LEARNER_LR */
  lr?: number;
  /** Share of each persona's prompts held out (eval/persona.ts splitPrompts). @default 3/8 */
  heldOut?: number;
  /** Sampled replies per held-out prompt and version. @default 4 */
  heldOutSamples?: number;
  /** Score after every n-th learner step (version 0 and the last always). @default 1 */
  evalEvery?: number;
  onProgress?: (line: string) => void;
}

/** One reply to a held-out prompt, and whether the persona was satisfied with it. */
export interface HeldOutReply {
  prompt: string;
  text: string;
  satisfied: boolean;
  /** It answers the prompt, whatever its style (eval/reaction.ts `isAnswer`). */
  answered: boolean;
}

/**
 * A version's held-out score: the share of replies that satisfy the persona, and the share that
 * answer at all — the second shows whether learning a style cost the answers.
 */
export interface HeldOutScore {
  version: number;
  interactions: number;
  satisfaction: number;
  answered: number;
  /** Held-out replies scored (prompts × samples): what the score's noise depends on. */
  replies?: number;
}

/** One interaction: the training prompt, the reply of `version`, and the persona's reaction. */
export interface Interaction {
  prompt: string;
  reply: string;
  reaction: string;
  satisfied: boolean;
  version: number;
}

export interface RunResult {
  persona: string;
  preference: string;
  seed: number;
  /** Score per scored version. */
  scores: HeldOutScore[];
  /** The held-out replies of the first and the last scored version, to read rather than trust a score. */
  replies?: { first: HeldOutReply[]; last: HeldOutReply[] };
  /** Each interaction as it went, to read, and to find where two runs of one (persona, seed) part. */
  talk?: Interaction[];
  /** Share of the interactions' replies the persona was satisfied with. */
  trainSatisfaction: number;
  samples: number;
  steps: StepMetrics[];
  /** Seconds spent generating replies, judging and building samples, in learner steps, and scoring held-out prompts. */
  time?: { generation: number; judging: number; training: number; scoring: number };
}

export interface EvalResult {
  personas: number;
  interactions: number;
  seeds: number;
  method: TrainMethod;
  mode: 'in-process' | 'pipeline';
  before: number;
  after: number;
  /** One entry per checkpoint of interactions; its `version` is the newest any run had reached there. */
  per_version: Array<HeldOutScore & { byPersona: Record<string, number> }>;
  /** Mean share of held-out replies that answer the prompt, at version 0 and at the last. */
  answered: { before: number; after: number };
  statistic: PairedTest & { unit: string };
  /** Share of non-zero judge scores that agree with the persona's hidden satisfaction. */
  judgeAgreement: number;
  batchSize: number;
  lr: number;
  /**
   * The learner-step settings a GGUF model's LoRA runs trained with (`TRAIN_*`; trainer/step-defaults.ts),
   * and whether the OPD hint was measured on the frozen base (`TRAIN_OPD_ON_BASE`).
   */
  step?: FamilyStepSettings & { opdOnBase: boolean };
  /**
   * The learner the runs trained: its settings (the configured learner's, `TRAIN_*` included) and
   * the overrides eval applied to it, by name (eval/eval-learner.ts).
   */
  learner?: EvalLearnerReport;
  /** `eval --workers`: the (persona, seed) runs that did not finish; the result covers the others. */
  failed_runs?: string[];
  /** Share of each persona's prompts held out, and sampled replies per held-out prompt and version. */
  heldOut: { share: number; samplesPerPrompt: number };
  seconds: number;
  runs: RunResult[];
}

const tok = new ByteTokenizer();

function toEvent(m: ChatMessage): EventMessage {
  return { role: m.role, content: m.content, name: null, toolCallId: null, toolCalls: [] };
}

export function promptIds(model: TransformerModel, messages: ChatMessage[]): number[] {
  return renderPrompt(tok, messages, { maxPromptTokens: Math.floor((model.config.contextLength * 3) / 4) }).ids;
}

/** A TurnPair as the session assembler would emit it for (reply, reaction). */
export function makePair(
  run: string,
  i: number,
  persona: Persona,
  messages: ChatMessage[],
  prompt: number[],
  reply: { ids: number[]; logprobs: number[]; text: string; temperature?: number; topP?: number },
  reaction: { text: string; rating: number | null },
  version: number,
  served: { modelId?: string; exactLogprobs?: boolean } = {},
): TurnPair {
  const modelId = served.modelId ?? 'turnstream-tiny';
  const turnId = `${run}-t${i}`;
  const now = Date.now();
  return {
    pairId: turnId,
    sessionId: `${run}-s${i}`,
    userId: persona.name,
    turn: {
      turnId,
      mainTurnIndex: 0,
      policyModelId: modelId,
      policyVersion: version,
      model: modelId,
      requestMessages: messages.map(toEvent),
      response: { content: reply.text, toolCalls: [], finishReason: 'stop' },
      promptTokenIds: prompt,
      responseTokenIds: reply.ids,
      responseLogprobs: reply.logprobs,
      tokenized: true,
      exactLogprobs: served.exactLogprobs ?? true,
      samplingTemperature: reply.temperature ?? 1,
      samplingTopP: reply.topP ?? 1,
      toolsJson: null,
      requestedAt: now,
      completedAt: now,
    },
    nextState: [{ role: 'USER', content: reaction.text, toolCallId: null }],
    endMarker: null,
    feedback: reaction.rating === null ? [] : [{ feedbackId: `${turnId}-fb`, rating: reaction.rating, text: null, createdAt: now }],
    historyVerified: true,
    createdAt: now,
    tag: null,
  };
}

/**
 * A run's random stream: its training prompts, reply seeds and reactions. In-process and pipeline
 * runs of one (persona, seed) draw the same, so that the two modes are compared on the same user.
 */
export const runRandom = (persona: Pick<Persona, 'name'>, seed: number): (() => number) =>
  mulberry32(seed * 1_000_003 + persona.name.length * 97 + persona.name.charCodeAt(0));

/** The request seed of held-out prompt `j` (its samples are `sampleSeed(heldOutSeed(seed, j), i)`). */
export const heldOutSeed = (seed: number, j: number): number => seed * 7919 + j;

/**
 * `value` as a consumer of topic `id` reads it: the log-probs, rewards and weights that `eval
 * --pipeline` sends as Avro floats come back as float32, so both modes train on the same numbers.
 */
export function onTheWire<T>(id: TopicId, value: T): T {
  const type = avroTypeOf(id);
  return type.fromBuffer(type.toBuffer(value)) as T;
}

/**
 * The current version's held-out satisfaction (share of `samples` replies per prompt that satisfy
 * the persona) and its share of answers; each reply is also appended to `replies` when given.
 */
export async function scoreModel(
  m: EvalModel,
  persona: Persona,
  heldOut: string[],
  samples: number,
  seed: number,
  replies: HeldOutReply[] = [],
): Promise<{ satisfaction: number; answered: number; replies: number }> {
  const scored: HeldOutReply[] = [];
  for (const [j, prompt] of heldOut.entries()) {
    for (const r of await m.reply(eventMessages(openingMessages(persona, prompt)), { seed: heldOutSeed(seed, j), n: samples }))
      scored.push(heldOutReply(persona, prompt, r.text));
  }
  replies.push(...scored);
  return shares(scored);
}

export function heldOutReply(persona: Pick<Persona, 'accepts'>, prompt: string, text: string): HeldOutReply {
  return { prompt, text, satisfied: satisfies(persona, text, prompt), answered: isAnswer(text, prompt) };
}

/** Shares of satisfied and of answering replies. */
export function shares(replies: readonly HeldOutReply[]): { satisfaction: number; answered: number; replies: number } {
  const n = Math.max(1, replies.length);
  return {
    satisfaction: replies.filter((r) => r.satisfied).length / n,
    answered: replies.filter((r) => r.answered).length / n,
    replies: replies.length,
  };
}

export const eventMessages = (messages: ChatMessage[]): EventMessage[] => messages.map(toEvent);

async function runOne(
  o: Required<Omit<EvalOptions, 'onProgress' | 'models'>> & Pick<EvalOptions, 'onProgress'>,
  models: EvalModels,
  persona: Persona,
  seed: number,
  judgeTally: { agree: number; total: number },
): Promise<RunResult> {
  const { train, heldOut } = splitPrompts(persona, { heldOut: o.heldOut });
  const runId = `${persona.name}-seed${seed}`;
  const m = await models.open(runId);
  const judge = createEmbeddedJudge({ mode: o.method });
  const rand = runRandom(persona, seed);
  const scores: RunResult['scores'] = [];
  const steps: StepMetrics[] = [];
  const time = { generation: 0, judging: 0, training: 0, scoring: 0 };
  const timed = async <T>(k: keyof typeof time, f: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try {
      return await f();
    } finally {
      time[k] += (performance.now() - t) / 1000;
    }
  };
  let satisfied = 0;
  let samples = 0;
  let stepsTaken = 0;
  const totalSteps = Math.ceil(o.interactions / o.batchSize);
  const replies = { first: [] as HeldOutReply[], last: [] as HeldOutReply[] };
  const talk: Interaction[] = [];
  try {
    scores.push({
      version: 0,
      interactions: 0,
      ...(await timed('scoring', () => scoreModel(m, persona, heldOut, o.heldOutSamples, seed, replies.first))),
    });
    let batch: Sample[] = [];
    for (let i = 0; i < o.interactions; i++) {
      const question = train[Math.floor(rand() * train.length)];
      const messages = openingMessages(persona, question);
      const [reply] = await timed('generation', () => m.reply(eventMessages(messages), { seed: Math.floor(rand() * 2 ** 31) }));
      const reaction = react(persona, reply.text, rand, undefined, question);
      if (reaction.satisfied) satisfied++;
      talk.push({ prompt: question, reply: reply.text, reaction: reaction.text, satisfied: reaction.satisfied, version: reply.version });
      const pair = makePair(runId, i, persona, messages, reply.promptIds, reply, reaction, reply.version, {
        modelId: m.modelId,
        exactLogprobs: reply.exactLogprobs,
      });
      const built = await timed('judging', async () => {
        const { votes, score: s, hint } = judge.evaluate(pair);
        if (s !== 0) {
          judgeTally.total++;
          if (s > 0 === reaction.satisfied) judgeTally.agree++;
        }
        return buildSample(onTheWire('judgements', makeJudgement(pair, 'embedded', votes, s, hint, Date.now())), {
          method: o.method,
          teacher: m.teacher,
        });
      });
      if (built.sample) batch.push(onTheWire('samples', built.sample));
      if ((i + 1) % o.batchSize === 0 || i === o.interactions - 1) {
        if (batch.length > 0) {
          const taken = batch;
          steps.push(await timed('training', () => m.step(taken)));
          samples += batch.length;
        }
        batch = [];
        stepsTaken++;
        if (stepsTaken % o.evalEvery === 0 || stepsTaken === totalSteps) {
          replies.last = [];
          scores.push({
            version: stepsTaken,
            interactions: i + 1,
            ...(await timed('scoring', () => scoreModel(m, persona, heldOut, o.heldOutSamples, seed, replies.last))),
          });
        }
      }
    }
  } finally {
    await m.close();
  }
  o.onProgress?.(
    `${runId}: ${scores.map((s) => s.satisfaction.toFixed(2)).join(' → ')}  (satisfied during interactions: ${satisfied}/${o.interactions}; ` +
      `${Object.entries(time)
        .map(([k, v]) => `${k} ${v.toFixed(0)} s`)
        .join(', ')})`,
  );
  return {
    persona: persona.name,
    preference: persona.preference,
    seed,
    scores,
    replies,
    talk,
    trainSatisfaction: satisfied / o.interactions,
    samples,
    steps,
    time,
  };
}

export async function runEval(opts: EvalOptions): Promise<EvalResult> {
  const t0 = Date.now();
  const o = { ...evalSettings(opts, { seeds: 3 }), evalEvery: opts.evalEvery ?? 1, onProgress: opts.onProgress };
  const tally = { agree: 0, total: 0 };
  const runs: RunResult[] = [];
  for (const seed of o.seedList) {
    for (const persona of o.personas) runs.push(await runOne(o, opts.models, persona, seed, tally));
  }
  return summarize(runs, o, tally, 'in-process', (Date.now() - t0) / 1000);
}

export function summarize(
  runs: RunResult[],
  o: Omit<EvalSettings, 'seedList'>,
  tally: { agree: number; total: number },
  mode: EvalResult['mode'],
  seconds: number,
): EvalResult {
  // One point per checkpoint of interactions: through the pipeline, runs reach it at different versions.
  const checkpoints = [...new Set(runs.flatMap((r) => r.scores.map((s) => s.interactions)))].sort((a, b) => a - b);
  const perVersion = checkpoints.map((interactions) => {
    const at = runs.map((r) => ({ r, s: r.scores.find((s) => s.interactions === interactions) })).filter((x) => x.s);
    const byPersona: Record<string, number> = {};
    for (const p of o.personas) {
      const v = at.filter((x) => x.r.persona === p.name).map((x) => x.s!.satisfaction);
      if (v.length) byPersona[p.name] = mean(v);
    }
    return {
      version: Math.max(...at.map((x) => x.s!.version)),
      interactions,
      satisfaction: mean(at.map((x) => x.s!.satisfaction)),
      answered: mean(at.map((x) => x.s!.answered)),
      byPersona,
    };
  });
  const before = runs.map((r) => r.scores[0].satisfaction);
  const after = runs.map((r) => r.scores[r.scores.length - 1].satisfaction);
  return {
    personas: o.personas.length,
    interactions: o.interactions,
    seeds: o.seeds,
    method: o.method,
    mode,
    before: mean(before),
    after: mean(after),
    per_version: perVersion,
    answered: { before: mean(runs.map((r) => r.scores[0].answered)), after: mean(runs.map((r) => r.scores[r.scores.length - 1].answered)) },
    statistic: {
      ...pairedPermutationTest(before, after),
      unit: 'one (persona, seed) run: held-out satisfaction of its last version − of version 0',
    },
    judgeAgreement: tally.total ? tally.agree / tally.total : NaN,
    batchSize: o.batchSize,
    lr: o.lr,
    heldOut: { share: o.heldOut, samplesPerPrompt: o.heldOutSamples },
    seconds,
    runs,
  };
}

/**
 * One result from results of disjoint personas run apart (`eval --workers N`): the runs pooled,
 * the curve and the paired test over all of them, the wall time the longest part's.
 */
export function mergeResults(parts: EvalResult[], personas: Persona[]): EvalResult {
  const [first] = parts;
  const runs = parts.flatMap((p) => p.runs);
  const tally = { agree: 0, total: 0 };
  for (const p of parts) {
    // judgeAgreement is a share; weigh each part by its runs (its own tally is not kept).
    if (Number.isFinite(p.judgeAgreement)) {
      tally.agree += p.judgeAgreement * p.runs.length;
      tally.total += p.runs.length;
    }
  }
  const names = new Set(runs.map((r) => r.persona));
  const seedList = [...new Set(runs.map((r) => r.seed))].sort((a, b) => a - b);
  const merged = summarize(
    runs,
    {
      personas: personas.filter((p) => names.has(p.name)),
      interactions: first.interactions,
      seeds: seedList.length,
      method: first.method,
      batchSize: first.batchSize,
      lr: first.lr,
      heldOut: first.heldOut.share,
      heldOutSamples: first.heldOut.samplesPerPrompt,
    },
    tally,
    first.mode,
    Math.max(...parts.map((p) => p.seconds)),
  );
  return { ...merged, ...(first.step ? { step: first.step } : {}), ...(first.learner ? { learner: first.learner } : {}) };
}
