/**
 * The learners of `turnstream up` (the train command's settings), eval and gym, started through
 * the root (stack/learner-service.ts) on real Kafka and a GGUF model the test writes: each
 * resumes, and their settings and options are the same but for the overrides eval and gym name.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { trainLearner, trainSettings } from '../../../cli/commands/train.ts';
import { loadConfig } from '../../../cli/config.ts';
import { evalLearnerOverrides } from '../../../eval/index.ts';
import { gymSettings } from '../../../gym/index.ts';
import { gymLearnerOverrides, gymServed } from '../../../gym/runner/gym-learner.ts';
import { selectBackend, writeTinyModel } from '../../../policy/index.ts';
import { inProcessPipeline, learnerService, type InProcessPipeline, type LearnerService } from '../../../stack/index.ts';
import { createLogger } from '../../../core/index.ts';
import { parseBrokers } from '../../../streams/index.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';

let dir: string;
let pipeline: InProcessPipeline;
const started: LearnerService[] = [];

before(async () => {
  const stack = await ensureStack();
  await selectBackend('wasm');
  dir = await mkdtemp(join(tmpdir(), 'ts-one-learner-'));
  pipeline = await inProcessPipeline(loadConfig({}, dir), {
    naming: { prefix: uniquePrefix('one-learner') },
    clientId: 'one-learner-test',
    kafkaLogger: createLogger('kafka', 'error'),
    endpoints: { brokers: parseBrokers(stack.brokers), registryUrl: stack.registryUrl },
    served: null,
    processors: [],
  });
});
after(async () => {
  for (const s of started) await s.handle.stop().catch(() => undefined);
  await pipeline?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("up's, eval's and gym's learners started through the root differ only in what eval and gym name", { timeout: 300_000 }, async () => {
  const tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { architecture: 'llama', seed: 3 });
  const model = { name: 'tiny', path: tiny.path, sha256: tiny.sha256 };
  // One configuration, with a few TRAIN_* set: they must reach all three.
  const config = loadConfig({ TRAIN_MAX_KL: '0.07', TRAIN_LORA_RANK: '4', TRAIN_ENTROPY_COEF: '0.01' }, dir);
  const logger = createLogger('one-learner', 'warn');
  const link = pipeline.link;
  const g = gymSettings({ tasks: [], suite: 's', brokers: link.brokers, registryUrl: link.registryUrl, model, stack: config });
  const start = async (modelId: string, c: typeof config, overrides: Parameters<typeof learnerService>[3]) => {
    const s = await learnerService(c, gymServed(g, modelId), link, { weightsDir: join(dir, 'weights'), logger, ...overrides });
    started.push(s);
    return s;
  };
  // As `turnstream train` builds it (so `up`), as eval's pipeline runs and gym's seeds do.
  const t = trainLearner(config, trainSettings(config, { consensus: true }));
  const up = await start('up', t.settings, t.overrides);
  const ev = await start('eval', config, { settings: evalLearnerOverrides({ batchSize: 2 }) });
  const gym = await start('gym', config, { settings: gymLearnerOverrides(g) });

  for (const [name, s] of Object.entries({ up, eval: ev, gym })) {
    assert.equal(s.handle.stats().version, 0, `${name}: resumed from the base`);
    assert.equal(s.plan.settings.maxKl, 0.07, `${name}: TRAIN_MAX_KL`);
    assert.equal(s.plan.settings.entropyCoef, 0.01, `${name}: TRAIN_ENTROPY_COEF`);
    assert.equal(s.plan.lineage?.lora?.rank, 4, `${name}: TRAIN_LORA_RANK`);
    assert.equal(s.plan.settings.maxTrainTokens, 1024, `${name}: one maxTrainTokens`);
  }
  for (const [name, s] of Object.entries({ eval: ev, gym })) {
    const named = Object.keys(s.plan.overrides);
    const differs = Object.keys(up.plan.settings).filter(
      (k) =>
        JSON.stringify((s.plan.settings as unknown as Record<string, unknown>)[k]) !==
        JSON.stringify((up.plan.settings as unknown as Record<string, unknown>)[k]),
    );
    assert.deepEqual(
      differs.filter((k) => !named.includes(k)),
      [],
      `${name} differs from up only where it names an override`,
    );
    assert.ok(differs.length > 0, `${name} does override something`);
    // The options the learner was started with follow: the step (but for a GRPO batch's changes) is up's.
    assert.deepEqual(Object.keys(s.plan.options.step ?? {}).sort(), Object.keys(up.plan.options.step ?? {}).sort(), name);
    assert.equal(s.plan.options.step?.maxKl, up.plan.options.step?.maxKl, name);
    assert.equal(s.plan.options.step?.klCoef, up.plan.options.step?.klCoef, name);
    assert.equal(s.plan.options.consensus, up.plan.options.consensus, name);
  }
  assert.deepEqual(Object.keys(up.plan.overrides), [], "up's is the configured learner");
});
