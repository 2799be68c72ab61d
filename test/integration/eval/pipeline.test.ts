/**
 * `eval --pipeline` on a GGUF model (a tiny one the test writes), against the real Kafka and
 * registry: personas talk to a gateway serving it on llama.cpp, turns go through the assembler,
 * the embedded judge and the sample builder (the model as its own OPD teacher) to a LoRA learner,
 * and the held-out score is taken from the version the gateway swapped in. The same persona and
 * seed run in-process must give the same replies, before and after training.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { terseTom } from '../../support/persona-spec.ts';
import { llamaEvalModels } from '../../../eval/eval-model.ts';
import { runPipelineEval } from '../../../eval/pipeline.ts';
import { runEval, type HeldOutReply } from '../../../eval/run-eval.ts';
import { evalLearnerPlan } from '../../../eval/eval-learner.ts';
import { resolveSettings } from '../../../stack/index.ts';
import { parseBrokers } from '../../../streams/index.ts';
import { selectBackend, writeTinyModel, type TinyModel } from '../../../policy/index.ts';
import { ensureStack } from '../../support/stack.ts';

let dir: string;
let tiny: TinyModel;
let stack: Awaited<ReturnType<typeof ensureStack>>;

before(async () => {
  stack = await ensureStack();
  await selectBackend('wasm');
  dir = await mkdtemp(join(tmpdir(), 'ts-eval-pipeline-'));
  tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { architecture: 'llama', seed: 11 });
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('eval --pipeline on a GGUF model: LoRA versions trained through Kafka and served by the gateway', { timeout: 600_000 }, async () => {
  const personas = [terseTom()];
  const run1 = { personas, interactions: 4, seeds: 1, batchSize: 2, lr: 1e-3, heldOut: 0.25, heldOutSamples: 2, peakSamples: 2 };
  const r = await runPipelineEval({
    ...run1,
    brokers: parseBrokers(stack.brokers),
    registryUrl: stack.registryUrl,
    baseWeightsDir: dir,
    llama: { model: { name: 'tiny', path: tiny.path, sha256: tiny.sha256 }, maxTokens: 6, temperature: 1 },
  });
  assert.equal(r.mode, 'pipeline');
  assert.equal(r.runs.length, 1);
  const [run] = r.runs;
  assert.deepEqual(
    run.scores.map((s) => s.interactions),
    [0, 2, 4],
  );
  assert.equal(run.scores[0].version, 0, 'the base answers first');
  const versions = run.scores.map((s) => s.version);
  assert.deepEqual(versions, [0, 1, 2], 'one LoRA version per block of two interactions, as in-process');
  assert.equal(run.samples, 4, 'every interaction became one trained sample');
  for (const s of run.scores) assert.ok(s.satisfaction >= 0 && s.satisfaction <= 1);

  // The same (persona, seed) in-process: the same user, the same sampling seeds and the same learner
  // (the configured one with eval's overrides), so that the two modes differ only in the transport.
  const served = { kind: 'llama' as const, name: 'tiny', modelId: 'tiny', path: tiny.path, sha256: tiny.sha256, systemPrompt: undefined };
  const plan = evalLearnerPlan(resolveSettings(), served, { batchSize: 2, lr: 1e-3 });
  assert.deepEqual(r.learner?.overrides, plan.overrides, 'the report names the overrides the runs trained with');
  assert.equal(r.lr, 1e-3);
  const models = await llamaEvalModels({
    model: { name: 'tiny', path: tiny.path, sha256: tiny.sha256 },
    dir: join(dir, 'in-process'),
    sampling: { maxTokens: 6, temperature: 1 },
    lr: plan.settings.lr,
    step: plan.options.step,
    lora: plan.lineage?.lora,
    maxTrainTokens: plan.settings.maxTrainTokens,
  });
  const local = await runEval({ ...run1, models }).finally(() => models.close());
  const texts = (replies: readonly HeldOutReply[] | undefined): string[] => (replies ?? []).map((x) => x.text);
  assert.equal(texts(run.replies?.first).length, 2);
  const [same] = local.runs;
  assert.deepEqual(texts(run.replies?.first), texts(same.replies?.first), 'the base samples the same held-out replies in both modes');
  assert.equal(run.trainSatisfaction, same.trainSatisfaction, 'the persona met the same replies while it talked');
  assert.equal(run.talk?.length, 4);
  assert.deepEqual(run.talk, same.talk, 'the same interactions, reply for reply and version for version');
  assert.equal(run.samples, same.samples);
  assert.deepEqual(
    texts(run.replies?.last),
    texts(same.replies?.last),
    'and the last version, trained through Kafka, answers as the one trained in-process',
  );
  // A run whose last score fell below its peak measures both again (a past version by number: `id@N`), alike in both modes.
  assert.deepEqual(run.remeasured, same.remeasured);
});
