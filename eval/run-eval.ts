/**
 * The evaluation loop, one for every mode: personas talk to the model, and every `batchSize`
 * interactions a block ends in a learner step and a new version. How the model replies and learns
 * is the run's learning path (eval/learning-path.ts): in-process (the pipeline's judge and sample
 * builder called directly, the learner's step: eval/in-process-path.ts) or through the gateway
 * and Kafka (eval/pipeline.ts). The users, their random streams and the scoring are the same.
 *
 * Score: for each version, the share of replies to HELD-OUT prompts (prompts no interaction used)
 * that satisfy the persona's hidden preference, `heldOutSamples` sampled replies per prompt at
 * temperature 1 (as served). One run = one persona × one seed, from the base checkpoint.
 */
import type { TrainMethod } from '../processors/index.ts';
import { mulberry32 } from '../core/index.ts';
import type { StepMetrics, FamilyStepSettings } from '../trainer/index.ts';
import { openingMessages, splitPrompts, type Persona } from './persona.ts';
import { evalSettings, type EvalSettings } from './eval-settings.ts';
import type { EvalModel, EvalModels } from './eval-model.ts';
import { inProcessPath } from './in-process-path.ts';
import type { LearningPath, RunPath } from './learning-path.ts';
import { eventMessages } from './turn-pair.ts';
import type { EvalLearnerReport } from './eval-learner.ts';
import { isAnswer, react, satisfies, type Reaction } from './reaction.ts';
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
  /**
   * Replies per held-out prompt when a run's peak and last version are measured again at its end
   * (only when the last scored below the peak, and where past versions are kept); 0: not measured
   * again. @default 16
   */
  peakSamples?: number;
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
  /**
   * The curve's peak version and its last, measured again at the run's end on fresh draws: the
   * peak is the highest of several noisy scores, so on the curve it reads high (run-eval.ts `remeasure`).
   */
  remeasured?: { peak: HeldOutScore; last: HeldOutScore };
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

/**
 * A run's random stream: its training prompts, reply seeds and reactions. In-process and pipeline
 * runs of one (persona, seed) draw the same, so that the two modes are compared on the same user.
 */
export const runRandom = (persona: Pick<Persona, 'name'>, seed: number): (() => number) =>
  mulberry32(seed * 1_000_003 + persona.name.length * 97 + persona.name.charCodeAt(0));

/** Replies per held-out prompt when a run's peak is measured again: 48 over 3 prompts, an eval step's noise halved. */
export const EVAL_PEAK_SAMPLES = 16;

/** The request seed of held-out prompt `j` (its samples are `sampleSeed(heldOutSeed(seed, j), i)`). */
export const heldOutSeed = (seed: number, j: number): number => seed * 7919 + j;

/** The request seed of held-out prompt `j` when a run's peak is measured again: draws the curve never made. */
export const remeasureSeed = (seed: number, j: number): number => heldOutSeed(seed + 100_000, j);

/** The first of a curve's highest scores. */
export const peakOf = <S extends Pick<HeldOutScore, 'satisfaction'>>(scores: readonly S[]): S =>
  scores.reduce((a, b) => (b.satisfaction > a.satisfaction ? b : a));

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

/** One (persona, seed) run on `path`: version 0 scored, then blocks of `batchSize` interactions, each ending in a learner step (a new version), scored every `evalEvery` blocks and after the last. */
async function runOne(path: LearningPath, o: LoopSettings, persona: Persona, seed: number): Promise<RunResult> {
  const { train, heldOut } = splitPrompts(persona, { heldOut: o.heldOut });
  const run = await path.open(persona, seed);
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
  const replies = { first: [] as HeldOutReply[], last: [] as HeldOutReply[] };
  const score = async (interactions: number): Promise<void> => {
    const scored = interactions === 0 ? replies.first : (replies.last = []);
    let version = 0;
    for (const [j, prompt] of heldOut.entries()) {
      const r = await run.heldOut(openingMessages(persona, prompt), heldOutSeed(seed, j), o.heldOutSamples, `${interactions}-${j}`);
      version = r.version;
      for (const text of r.texts) scored.push(heldOutReply(persona, prompt, text));
    }
    scores.push({ version, interactions, ...shares(scored) });
  };
  let satisfied = 0;
  let blocks = 0;
  let remeasured: RunResult['remeasured'];
  const talk: Interaction[] = [];
  try {
    await timed('scoring', () => score(0));
    for (let i = 0; i < o.interactions; i++) {
      // Drawn in this order (prompt, reply seed, reaction) in both modes: the same user either way.
      const question = train[Math.floor(rand() * train.length)];
      const replySeed = Math.floor(rand() * 2 ** 31);
      const t = await timed('generation', () =>
        run.interact(i, openingMessages(persona, question), replySeed, (reply: string): Reaction =>
          react(persona, reply, rand, undefined, question),
        ),
      );
      time.generation -= t.judgingSeconds;
      time.judging += t.judgingSeconds;
      if (t.reaction.satisfied) satisfied++;
      talk.push({ prompt: question, reply: t.reply, reaction: t.reaction.text, satisfied: t.reaction.satisfied, version: t.version });
      const last = i === o.interactions - 1;
      if ((i + 1) % o.batchSize === 0 || last) {
        const m = await timed('training', () => run.endBlock(i + 1));
        if (m) steps.push(m);
        blocks++;
        if (blocks % o.evalEvery === 0 || last) await timed('scoring', () => score(i + 1));
      }
    }
    remeasured = await timed('scoring', () => remeasure(run, o, persona, heldOut, seed, scores));
  } finally {
    await run.close();
  }
  o.onProgress?.(
    `${run.runId}: ${scores.map((s) => `v${s.version} ${s.satisfaction.toFixed(2)}`).join(' → ')}  (satisfied during interactions: ${satisfied}/${o.interactions}; ` +
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
    ...(remeasured ? { remeasured } : {}),
    trainSatisfaction: satisfied / o.interactions,
    samples: run.trained(),
    steps,
    time,
  };
}

/**
 * A run whose last score is below its peak: both versions measured again on `peakSamples` fresh
 * draws per held-out prompt (the same draws for both), so that whether it ended below its peak is
 * not read off the highest of several noisy scores. Undefined when the last is the peak, when
 * measuring again is off, or where the path keeps no past version.
 */
async function remeasure(
  run: RunPath,
  o: Pick<LoopSettings, 'peakSamples'>,
  persona: Persona,
  heldOut: readonly string[],
  seed: number,
  scores: readonly HeldOutScore[],
): Promise<RunResult['remeasured']> {
  if (!o.peakSamples || !run.pastVersions || scores.length < 2) return undefined;
  const peak = peakOf(scores);
  const last = scores[scores.length - 1];
  if (last.satisfaction >= peak.satisfaction) return undefined;
  const measure = async (s: HeldOutScore): Promise<HeldOutScore> => {
    const scored: HeldOutReply[] = [];
    for (const [j, prompt] of heldOut.entries()) {
      const r = await run.heldOut(
        openingMessages(persona, prompt),
        remeasureSeed(seed, j),
        o.peakSamples,
        `again-v${s.version}-${j}`,
        s.version,
      );
      for (const text of r.texts) scored.push(heldOutReply(persona, prompt, text));
    }
    return { version: s.version, interactions: s.interactions, ...shares(scored) };
  };
  return { peak: await measure(peak), last: await measure(last) };
}

/** What the loop needs of an eval's settings. */
export type LoopSettings = EvalSettings & { evalEvery: number; peakSamples: number; onProgress?: (line: string) => void };

/** The eval loop: every (persona, seed) run on `path`, one after another, and their summary. */
export async function evaluate(path: LearningPath, o: LoopSettings): Promise<EvalResult> {
  const t0 = Date.now();
  const runs: RunResult[] = [];
  for (const seed of o.seedList) {
    for (const persona of o.personas) runs.push(await runOne(path, o, persona, seed));
  }
  const result = summarize(runs, o, { agree: 0, total: 0 }, path.mode, (Date.now() - t0) / 1000);
  const learner = path.learner();
  return { ...result, judgeAgreement: path.judgeAgreement(), ...(learner ? { learner } : {}) };
}

/** The eval in-process: `opts.models` trained by the learner's step, the pipeline's judge and sample builder called directly. */
export function runEval(opts: EvalOptions): Promise<EvalResult> {
  const o = {
    ...evalSettings(opts, { seeds: 3 }),
    evalEvery: opts.evalEvery ?? 1,
    peakSamples: opts.peakSamples ?? EVAL_PEAK_SAMPLES,
    onProgress: opts.onProgress,
  };
  return evaluate(inProcessPath({ models: opts.models, method: o.method }), o);
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
