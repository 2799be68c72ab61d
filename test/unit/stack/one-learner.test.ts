/**
 * One learner: `turnstream up`'s (the train command's settings), eval's and gym's are built by the
 * same root (stack/learner-service.ts) from the same configuration, and differ only in the
 * overrides each run names (and reports in its JSON).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trainLearner, trainSettings } from '../../../cli/commands/train.ts';
import { loadConfig } from '../../../cli/config.ts';
import { evalLearnerPlan } from '../../../eval/index.ts';
import { gymSettings } from '../../../gym/index.ts';
import { gymLearnerPlan, gymServed } from '../../../gym/runner/gym-learner.ts';
import { learnerPlan, type LearnerPlan, type ServedModel } from '../../../stack/index.ts';
import { LEARNER_DEFAULTS, LEARNER_FAMILY_DEFAULTS, RewardBaseline, type LearnerSettings } from '../../../trainer/index.ts';

const MODEL = { name: 'smollm2-135m', path: '/models/smollm2.gguf', sha256: 'ab'.repeat(32) };
const served: ServedModel = { kind: 'llama', ...MODEL, modelId: 'smollm2-135m', systemPrompt: undefined };

/** The three learners on one configuration, each built as its command builds it. */
function threeLearners(env: Record<string, string> = {}): { up: LearnerPlan; eval: LearnerPlan; gym: LearnerPlan } {
  const config = loadConfig(env, '/tmp');
  // `turnstream train` (what `up` runs): its flags over the configuration, no override.
  const t = trainLearner(config, trainSettings(config, { consensus: true }));
  const up = learnerPlan(t.settings, served, t.overrides);
  // `turnstream eval` on a GGUF model: 2 interactions per version, no --lr.
  const ev = evalLearnerPlan(config, served, { batchSize: 2 });
  // `turnstream gym`: its defaults.
  const g = gymSettings({ tasks: [], suite: 's', brokers: [], registryUrl: '', model: MODEL, stack: config });
  const gym = gymLearnerPlan(config, gymServed(g, 'gym-x-s1'), g);
  return { up, eval: ev, gym };
}

/** The settings where `plan` differs from `base`. */
const differing = (plan: LearnerPlan, base: LearnerPlan): string[] =>
  (Object.keys(base.settings) as Array<keyof LearnerSettings>)
    .filter((k) => JSON.stringify(plan.settings[k]) !== JSON.stringify(base.settings[k]))
    .sort();

/** A plan's learner options as data (the reward baseline by its settings, not by identity). */
const optionsOf = (p: LearnerPlan) =>
  JSON.parse(
    JSON.stringify({ ...p.options, lineage: p.lineage, logger: undefined }, (_k, v: unknown) =>
      v instanceof RewardBaseline ? { rewardBaseline: 'RewardBaseline' } : v,
    ),
  ) as Record<string, unknown>;

describe('one learner for up, eval and gym (stack/learner-service.ts)', () => {
  it('eval and gym differ from up only in the overrides they name', () => {
    const { up, eval: ev, gym } = threeLearners();
    for (const [name, plan] of [
      ['eval', ev],
      ['gym', gym],
    ] as const) {
      const named = Object.keys(plan.overrides).sort();
      const changed = differing(plan, up);
      assert.deepEqual(
        changed.filter((k) => !named.includes(k)),
        [],
        `${name}: every setting it does not name is up's`,
      );
      for (const k of named)
        assert.deepEqual(plan.settings[k as keyof LearnerSettings], (plan.overrides as Record<string, unknown>)[k], `${name}: ${k}`);
    }
    // What each names, today (a new override is a decision, reported in the run's JSON).
    assert.deepEqual(Object.keys(ev.overrides).sort(), ['batchSize', 'maxStaleness', 'maxUserShare', 'maxWaitMs', 'minSamples']);
    assert.deepEqual(Object.keys(gym.overrides).sort(), [
      'batchSize',
      'grpoKlCoef',
      'grpoTokenMean',
      'loraLastLayers',
      'lr',
      'maxStaleness',
      'maxUserShare',
      'maxWaitMs',
      'minSamples',
      'tisCap',
    ]);
    assert.deepEqual(ev.overrides, { batchSize: 2, minSamples: 2, maxWaitMs: 4000, maxUserShare: 1, maxStaleness: 1000 });
    assert.deepEqual(gym.overrides, {
      batchSize: 1,
      minSamples: 1,
      maxWaitMs: 600_000,
      maxUserShare: 1,
      maxStaleness: 1000,
      lr: 1e-3,
      grpoKlCoef: 0.05,
      loraLastLayers: 8,
      tisCap: 2,
      grpoTokenMean: 'batch',
    });
  });

  it("up's learner is the module defaults: LoRA family, one maxTrainTokens (1024) for all three", () => {
    const { up, eval: ev, gym } = threeLearners();
    assert.deepEqual(up.overrides, {});
    assert.deepEqual(up.settings, { ...LEARNER_DEFAULTS, ...LEARNER_FAMILY_DEFAULTS.lora, loraTargets: ['q', 'k', 'v', 'o'] });
    for (const p of [up, ev, gym]) {
      assert.equal(p.settings.maxTrainTokens, 1024);
      assert.equal(p.lineage?.maxTrainTokens, 1024);
      // the gym adapts the last 8 layers only (gym-options.ts GYM_LORA_LAYERS), a named override
      assert.deepEqual(p.lineage?.lora, { rank: 8, alpha: 16, targets: ['q', 'k', 'v', 'o'], lastLayers: p === gym ? 8 : 0 });
      assert.equal(p.settings.maxKl, 0.1);
      assert.equal(p.settings.mismatchTis, true);
      assert.equal(p.settings.klCoef, 0.25);
    }
  });

  it('TRAIN_* reach all three learners alike; an override wins only where it is named', () => {
    const env = {
      TRAIN_MAX_KL: '0.07',
      TRAIN_ENTROPY_COEF: '0.01',
      TRAIN_LORA_RANK: '4',
      TRAIN_MAX_TOKENS: '768',
      TRAIN_MISMATCH_TIS: 'off',
      TRAIN_KL_COEF: '0.1',
      TRAIN_LR: '5e-4',
      TRAIN_BATCH_SIZE: '6',
    };
    const { up, eval: ev, gym } = threeLearners(env);
    for (const [name, p] of Object.entries({ up, eval: ev, gym })) {
      assert.equal(p.settings.maxKl, 0.07, name);
      assert.equal(p.settings.entropyCoef, 0.01, name);
      assert.equal(p.lineage?.lora?.rank, 4, name);
      assert.equal(p.settings.maxTrainTokens, 768, name);
      assert.equal(p.settings.mismatchTis, false, name);
      assert.equal(p.settings.klCoef, 0.1, name);
    }
    assert.equal(up.settings.lr, 5e-4);
    assert.equal(ev.settings.lr, 5e-4, 'eval without --lr trains at the configured rate');
    assert.equal(gym.settings.lr, 1e-3, 'gym names its own rate (--lr, default GYM_LR)');
    assert.equal(up.settings.batchSize, 6);
    assert.equal(ev.settings.batchSize, 2, "eval's batch is its --batch-size");
    assert.equal(gym.settings.batchSize, 1, 'a gym rollout batch is one step');
    assert.equal(
      evalLearnerPlan(loadConfig(env, '/tmp'), served, { batchSize: 2, lr: 3e-3 }).settings.lr,
      3e-3,
      '--lr is named when given',
    );
  });

  it('the options built from the settings are the same wherever the settings are', () => {
    const { up, eval: ev, gym } = threeLearners();
    const o = { up: optionsOf(up), eval: optionsOf(ev), gym: optionsOf(gym) };
    // The step every sample trains with (a GRPO batch's changes of it apart) and the lineage but its model id and store.
    for (const name of ['eval', 'gym'] as const) {
      assert.deepEqual(o[name].step, o.up.step, `${name}: step`);
      // the adapter's layers apart: a gym run names its own (GYM_LORA_LAYERS), checked above
      const sameButLayers = (l: unknown) => {
        const x = l as { lora: object };
        return { ...x, modelId: '', weightsDir: '', lora: { ...x.lora, lastLayers: 0 } };
      };
      assert.deepEqual(sameButLayers(o[name].lineage), sameButLayers(o.up.lineage), `${name}: lineage`);
    }
    assert.equal((o.eval.lineage as { lora: { lastLayers: number } }).lora.lastLayers, 0);
    assert.deepEqual(o.eval.grpoStep, o.up.grpoStep);
    assert.deepEqual(o.up.grpoStep, { klCoef: 0, tokenMean: 'batch' });
    assert.deepEqual(o.gym.grpoStep, { klCoef: 0.05, tokenMean: 'batch' });
    assert.equal(o.gym.consensus, o.up.consensus, "gym keeps up's consensus (it never weighs a GRPO batch)");
  });
  it("the weight transport: up's is TURNSTREAM_WEIGHTS_TRANSPORT or --weights-transport; eval's and gym's runs, on a store of their own, keep file", () => {
    const upOf = (env: Record<string, string>, weightsTransport?: string) => {
      const config = loadConfig(env, '/tmp');
      const t = trainLearner(config, trainSettings(config, { consensus: true, weightsTransport }));
      return learnerPlan(t.settings, served, t.overrides).options.weightsTransport;
    };
    assert.equal(upOf({}), 'file');
    assert.equal(upOf({ TURNSTREAM_WEIGHTS_TRANSPORT: 'kafka' }), 'kafka');
    assert.equal(upOf({}, 'kafka'), 'kafka');
    assert.equal(upOf({ TURNSTREAM_WEIGHTS_TRANSPORT: 'kafka' }, 'file'), 'file');
    const config = loadConfig({ TURNSTREAM_WEIGHTS_TRANSPORT: 'kafka' }, '/tmp');
    const run = { weightsDir: '/tmp/run-weights' };
    assert.equal(evalLearnerPlan(config, served, { batchSize: 2 }, run).options.weightsTransport, 'file');
    const g = gymSettings({ tasks: [], suite: 's', brokers: [], registryUrl: '', model: MODEL, stack: config });
    assert.equal(gymLearnerPlan(config, gymServed(g, 'gym-x-s1'), g, run).options.weightsTransport, 'file');
    assert.equal(learnerPlan(config, served, { ...run, weightsTransport: 'kafka' }).options.weightsTransport, 'kafka', 'named, it wins');
  });
});
