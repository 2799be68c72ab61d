/**
 * "Many users, one model" (docs/design/algorithms.md §7), in-process: K simulated users who share one hidden
 * preference (any persona; by default replies that end with a question) and one adversarial user
 * with the opposite one (pleased exactly when the others are not, correcting the others) all talk
 * to ONE model (the built-in one or a GGUF model with LoRA versions: eval/eval-model.ts). Their turns go through the pipeline's judge and sample builder, into the learner's
 * batcher (per-user share cap) and, with `consensus`, the learner's consensus weighting
 * (trainer/consensus-weighting.ts), then the learner step. Every run is done twice with the same
 * seed — consensus on and off — so the weighting's effect is measured side by side.
 *
 * Measured: the shared preference's held-out satisfaction before/after; the adversary's share of
 * the trained samples, its mean effective consensus weight and its share of the total loss weight.
 */
import { createEmbeddedJudge, type TrainMethod } from '../processors/index.ts';
import {
  SampleBatcher,
  ratedTurnOf,
  weighByConsensus,
  type StepSample,
  LEARNER_LR,
  UserConsensus,
  type Conflict,
  type UserStats,
} from '../trainer/index.ts';
import { mulberry32 } from '../core/index.ts';
import type { EvalModel, EvalModels } from './eval-model.ts';
import { compileCheck, mean } from '../measure/index.ts';
import { BUILTIN_PERSONAS_FILE, DEFAULT_HELD_OUT, loadPersonas, openingMessages, splitPrompts, type Persona } from './persona.ts';
import { react } from './reaction.ts';
import { judgedSample } from './in-process-path.ts';
import { scoreModel } from './run-eval.ts';
import { eventMessages, makePair } from './turn-pair.ts';

export interface MultiUserEvalOptions {
  /** The model every run starts from and learns on. */
  models: EvalModels;
  /** The preference the users share. @default curious-quinn of the built-in personas (ends with a question) */
  persona?: Persona;
  /** Users sharing the preference. @default 3 */
  users?: number;
  /** Interactions per user (the adversary's included). @default 24 */
  interactions?: number;
  /** How many times as often as each other user the adversary talks. @default 1 */
  adversaryRate?: number;
  /** @default 2 */
  seeds?: number;
  /**
   * Probability that one other user (the adversary included) also sees a reply and reacts to it
   * (a shared thread): the only way two users rate the same turn, which the consensus compares.
   * @default 0
   */
  sharedRate?: number;
  /** Samples per learner step. @default 8 */
  batchSize?: number;
  /** The batcher's per-user cap. @default 0.25 */
  maxUserShare?: number;
  /** @default 'combined' */
  method?: TrainMethod;
  /** @default LEARNER_LR */
  lr?: number;
  /** Share of the persona's prompts held out. @default 3/8 */
  heldOut?: number;
  /** @default 4 */
  heldOutSamples?: number;
  onProgress?: (line: string) => void;
}

export interface MultiUserRun {
  seed: number;
  consensus: boolean;
  before: number;
  after: number;
  steps: number;
  trained: number;
  adversaryTrained: number;
  /** Adversary samples left waiting under the cap when the run ended. */
  adversaryCapped: number;
  adversaryShare: number;
  /** Mean consensus factor of the adversary's trained samples (1 with consensus off). */
  adversaryWeight: number;
  /** Mean consensus factor of the other users' trained samples. */
  othersWeight: number;
  /** Adversary's share of the summed loss weight. */
  adversaryWeightShare: number;
  /** What the users themselves were satisfied with during the run. */
  trainSatisfaction: Record<string, number>;
  users: UserStats[];
  conflicts: Conflict[];
}

export interface MultiUserArm {
  before: number;
  after: number;
  adversary_share: number;
  adversary_weight: number;
  others_weight: number;
  adversary_weight_share: number;
}

export interface MultiUserEvalResult extends MultiUserArm {
  users: number;
  adversaries: number;
  interactions: number;
  seeds: number;
  /** The shared persona's name and preference. */
  persona: string;
  preference: string;
  batchSize: number;
  maxUserShare: number;
  sharedRate: number;
  lr: number;
  method: TrainMethod;
  baseline_no_consensus: MultiUserArm;
  seconds: number;
  runs: MultiUserRun[];
}

export const ADVERSARY_ID = 'adversary';

/** The users who share the preference: copies of the question persona under their own names. */
function sharedPersona(quinn: Persona, i: number): Persona {
  return { ...quinn, name: `quinn-${i + 1}` };
}

/** The adversary: satisfied exactly when the others are not (an empty reply satisfies nobody). */
function adversaryOf(quinn: Persona): Persona {
  const not = compileCheck({ not: quinn.check });
  return {
    ...quinn,
    name: ADVERSARY_ID,
    preference: `the opposite of the others: not (${quinn.preference})`,
    check: { not: quinn.check },
    accepts: not,
    corrections:
      quinn.name === 'curious-quinn'
        ? ["Don't ask me questions. Just answer, no question at the end.", 'Stop ending with a question. Just answer.']
        : ['No, I do not like it this way. Try again.', 'That is not what I wanted. Answer differently.'],
  };
}

type O = Required<Omit<MultiUserEvalOptions, 'onProgress' | 'models' | 'persona'>> & Pick<MultiUserEvalOptions, 'onProgress'>;

/** One run's state: its model, judge, consensus, batcher, the users and what they were satisfied with, what was trained. */
interface RunState {
  o: O;
  m: EvalModel;
  seed: number;
  consensusOn: boolean;
  judge: ReturnType<typeof createEmbeddedJudge>;
  consensus: UserConsensus;
  batcher: SampleBatcher<null>;
  rand: () => number;
  people: Persona[];
  adversary: Persona;
  satisfied: Record<string, { ok: number; n: number }>;
  trained: Array<{ user: string | null; factor: number; weight: number }>;
  steps: number;
}

async function runOne(o: O, models: EvalModels, seed: number, consensusOn: boolean, quinn: Persona): Promise<MultiUserRun> {
  const { train, heldOut } = splitPrompts(quinn, { heldOut: o.heldOut });
  const m = await models.open(`users-${quinn.name}-${seed}-${consensusOn ? 'c' : 'n'}`);
  const st: RunState = {
    o,
    m,
    seed,
    consensusOn,
    judge: createEmbeddedJudge({ mode: o.method }),
    consensus: new UserConsensus(),
    batcher: new SampleBatcher<null>({
      batchSize: o.batchSize,
      maxUserShare: o.maxUserShare,
      maxStaleness: 1e9,
      maxWaitMs: Number.POSITIVE_INFINITY,
    }),
    rand: mulberry32(seed * 1_000_003 + 7),
    people: Array.from({ length: o.users }, (_, i) => sharedPersona(quinn, i)),
    adversary: adversaryOf(quinn),
    satisfied: {},
    trained: [],
    steps: 0,
  };
  const probe = st.people[0];
  try {
    const before = (await scoreModel(m, probe, heldOut, o.heldOutSamples, seed)).satisfaction;
    for (const [i, p] of schedule(st).entries()) {
      await interact(st, i, p, train);
      while (st.batcher.ready(m.version))
        await step(
          st,
          st.batcher.take(m.version).batch.map((b) => ({ sample: b.sample })),
        );
    }
    // The tail: one last (partial, capped) batch; what the cap still holds back stays untrained.
    await step(
      st,
      st.batcher.take(m.version).batch.map((b) => ({ sample: b.sample })),
    );
    const adversaryCapped = st.batcher.pending().filter((p) => p.sample.userId === ADVERSARY_ID).length;
    const after = (await scoreModel(m, probe, heldOut, o.heldOutSamples, seed)).satisfaction;
    const run = runSummary(st, before, after, adversaryCapped);
    o.onProgress?.(
      `seed ${seed} consensus ${consensusOn ? 'on ' : 'off'}: ${before.toFixed(2)} → ${after.toFixed(2)}, ${st.steps} steps, adversary ${run.adversaryTrained}/${run.trained} samples (${adversaryCapped} capped), weight ${run.adversaryWeight.toFixed(3)} vs others ${run.othersWeight.toFixed(3)}, conflicts ${run.conflicts.length}`,
    );
    return run;
  } finally {
    await m.close();
  }
}

/** Who talks when: each round every user once, then the adversary `adversaryRate` times. */
function schedule(st: RunState): Persona[] {
  const order: Persona[] = [];
  for (let r = 0; r < st.o.interactions; r++) {
    order.push(...st.people);
    for (let a = 0; a < st.o.adversaryRate; a++) order.push(st.adversary);
  }
  return order;
}

/** One learner step on a batch: weighted by the consensus when it is on (observed for the statistics only when it is off). */
async function step(st: RunState, items: StepSample[]): Promise<void> {
  if (items.length === 0) return;
  const { m, consensus } = st;
  const w = st.consensusOn ? weighByConsensus(consensus, items, m.sampleText) : { items, factors: items.map(() => 1) };
  if (!st.consensusOn) for (const it of items) consensus.observe(ratedTurnOf(it.sample, m.sampleText)); // stats only, not applied
  await m.step(w.items.map((it) => it.sample));
  w.items.forEach((it, i) => st.trained.push({ user: it.sample.userId, factor: w.factors[i], weight: it.sample.weight }));
  st.steps++;
}

/** Interaction `i`: `p` asks a training prompt; `p` (and now and then one other user) reacts; each reaction is judged into a sample for the batcher. */
async function interact(st: RunState, i: number, p: Persona, train: string[]): Promise<void> {
  const { m, rand, seed, consensusOn } = st;
  const question = train[Math.floor(rand() * train.length)];
  const messages = openingMessages(p, question);
  const [reply] = await m.reply(eventMessages(messages), { seed: Math.floor(rand() * 2 ** 31) });
  const reactors: Persona[] = [p];
  // A shared thread: now and then one other user (the adversary included) sees the same reply and reacts too.
  if (rand() < st.o.sharedRate) {
    const others = [...st.people, st.adversary].filter((q) => q.name !== p.name);
    reactors.push(others[Math.floor(rand() * others.length)]);
  }
  for (const [k, q] of reactors.entries()) {
    const reaction = react(q, reply.text, rand, undefined, question);
    const s = (st.satisfied[q.name] ??= { ok: 0, n: 0 });
    s.n++;
    if (reaction.satisfied) s.ok++;
    const pair = makePair(`mu-${seed}-${consensusOn ? 'c' : 'n'}-${k}`, i, q, messages, reply.promptIds, reply, reaction, reply.version, {
      modelId: m.modelId,
      exactLogprobs: reply.exactLogprobs,
    });
    const { sample } = await judgedSample(st.judge, pair, st.o.method, m.teacher);
    if (sample) st.batcher.add(sample, null);
  }
}

/** What a run measured: the adversary's share of the trained samples, its consensus weight and its share of the loss weight. */
function runSummary(st: RunState, before: number, after: number, adversaryCapped: number): MultiUserRun {
  const { trained } = st;
  const adv = trained.filter((t) => t.user === ADVERSARY_ID);
  const others = trained.filter((t) => t.user !== ADVERSARY_ID);
  const totalW = trained.reduce((a, t) => a + t.weight, 0);
  return {
    seed: st.seed,
    consensus: st.consensusOn,
    before,
    after,
    steps: st.steps,
    trained: trained.length,
    adversaryTrained: adv.length,
    adversaryCapped,
    adversaryShare: adv.length / Math.max(1, trained.length),
    adversaryWeight: adv.length ? mean(adv.map((t) => t.factor)) : NaN,
    othersWeight: others.length ? mean(others.map((t) => t.factor)) : NaN,
    adversaryWeightShare: totalW ? adv.reduce((a, t) => a + t.weight, 0) / totalW : NaN,
    trainSatisfaction: Object.fromEntries(Object.entries(st.satisfied).map(([k, v]) => [k, v.ok / v.n])),
    users: st.consensus.stats(),
    conflicts: st.consensus.conflicts(),
  };
}

function arm(runs: MultiUserRun[]): MultiUserArm {
  return {
    before: mean(runs.map((r) => r.before)),
    after: mean(runs.map((r) => r.after)),
    adversary_share: mean(runs.map((r) => r.adversaryShare)),
    adversary_weight: mean(runs.map((r) => r.adversaryWeight)),
    others_weight: mean(runs.map((r) => r.othersWeight)),
    adversary_weight_share: mean(runs.map((r) => r.adversaryWeightShare)),
  };
}

export async function runMultiUserEval(opts: MultiUserEvalOptions): Promise<MultiUserEvalResult> {
  const t0 = Date.now();
  const o: O = {
    users: opts.users ?? 3,
    interactions: opts.interactions ?? 24,
    adversaryRate: opts.adversaryRate ?? 1,
    sharedRate: opts.sharedRate ?? 0,
    seeds: opts.seeds ?? 2,
    batchSize: opts.batchSize ?? 8,
    maxUserShare: opts.maxUserShare ?? 0.25,
    method: opts.method ?? 'combined',
    lr: opts.lr ?? LEARNER_LR,
    heldOut: opts.heldOut ?? DEFAULT_HELD_OUT,
    heldOutSamples: opts.heldOutSamples ?? 4,
    onProgress: opts.onProgress,
  };
  // The shared preference: by default curious-quinn of the builtin personas (replies that end with a question).
  const quinn = opts.persona ?? (await loadPersonas(BUILTIN_PERSONAS_FILE)).find((p) => p.name === 'curious-quinn')!;
  const runs: MultiUserRun[] = [];
  for (let seed = 1; seed <= o.seeds; seed++) {
    for (const on of [true, false]) runs.push(await runOne(o, opts.models, seed, on, quinn));
  }
  return {
    users: o.users,
    adversaries: 1,
    interactions: o.interactions,
    seeds: o.seeds,
    persona: quinn.name,
    preference: quinn.preference,
    ...arm(runs.filter((r) => r.consensus)),
    baseline_no_consensus: arm(runs.filter((r) => !r.consensus)),
    batchSize: o.batchSize,
    maxUserShare: o.maxUserShare,
    sharedRate: o.sharedRate,
    lr: o.lr,
    method: o.method,
    seconds: (Date.now() - t0) / 1000,
    runs,
  };
}
