/**
 * `turnstream eval --users K` in-process, at toy size on a small random model: both arms (with
 * and without consensus weighting) run, the per-batch cap holds the adversary's share, and the
 * figures the command prints are there. The learning itself is measured by the real eval.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ADVERSARY_ID, runMultiUserEval } from '../../../eval/multi-user.ts';
import { builtinEvalModels, llamaEvalModels } from '../../../eval/eval-model.ts';
import { parsePersonas } from '../../../eval/persona.ts';
import { familyStepOptions, familyStepSettings } from '../../../trainer/step-defaults.ts';
import { initCheckpoint, loadPolicy, selectBackend, writeTinyModel } from '../../../policy/index.ts';

test('runMultiUserEval: two arms, the adversary within the cap, weights and shares reported', { timeout: 240_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ts-eval-users-'));
  try {
    const base = await initCheckpoint(dir, { config: { contextLength: 192, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 }, seed: 2 });
    const teacherPolicy = await loadPolicy({ weightsDir: dir, version: 0 });
    try {
      const r = await runMultiUserEval({
        models: builtinEvalModels({ baseUri: base.uri, teacherPolicy, lr: 1e-3 }),
        users: 2,
        adversaryRate: 2,
        interactions: 8,
        seeds: 1,
        batchSize: 4,
        maxUserShare: 0.25,
        heldOut: 0.06,
        heldOutSamples: 2,
      });
      assert.equal(r.runs.length, 2, 'one run with consensus weighting, one without');
      assert.deepEqual(r.runs.map((x) => x.consensus).sort(), [false, true]);
      for (const run of r.runs) {
        assert.ok(run.trained > 0 && run.steps > 0);
        // The cap: at most ceil(0.25 × 4) = 1 adversary sample per batch; the rest wait (capped).
        assert.ok(run.adversaryTrained <= run.steps, `${run.adversaryTrained} adversary samples in ${run.steps} steps`);
        assert.ok(run.adversaryCapped > 0, 'the adversary, talking twice as much, hit the cap');
        assert.ok(run.before >= 0 && run.before <= 1 && run.after >= 0 && run.after <= 1);
      }
      const weighted = r.runs.find((x) => x.consensus)!;
      assert.ok(weighted.users.some((u) => u.userId === ADVERSARY_ID));
      assert.ok(weighted.adversaryWeight > 0 && weighted.adversaryWeight <= 1);
      assert.equal(r.baseline_no_consensus.adversary_weight, 1, 'without weighting every user counts fully');
    } finally {
      teacherPolicy.dispose();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test(
  'runMultiUserEval on a GGUF model with an open persona: LoRA versions in both arms, the adversary trained on too',
  { timeout: 300_000 },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ts-eval-users-gguf-'));
    try {
      await selectBackend('wasm');
      const tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { architecture: 'llama', seed: 5 });
      // A check the shipped personas do not use: a reply that starts with "ok" and has a digit.
      const [persona] = parsePersonas(
        {
          personas: [
            {
              name: 'ok-olga',
              preference: 'starts with "ok" and gives a number',
              check: { all: [{ starts_with: 'ok' }, { regex_count_at_least: ['[0-9]', 1] }] },
              satisfied: ['Good, thanks.'],
              corrections: ['Start with ok and give me a number.'],
              prompts: ['how many legs has a cat?', 'how old is the sun?', 'how far is the moon?', 'how many days in a week?'],
            },
          ],
        },
        'test personas',
      );
      const models = await llamaEvalModels({
        model: { name: 'tiny', path: tiny.path, sha256: tiny.sha256 },
        dir: join(dir, 'runs'),
        sampling: { maxTokens: 6, temperature: 1 },
        lr: 1e-3,
        step: familyStepOptions(familyStepSettings(true, {})),
      });
      const lines: string[] = [];
      const r = await runMultiUserEval({
        models,
        persona,
        users: 2,
        interactions: 4,
        seeds: 1,
        batchSize: 4,
        heldOut: 0.25,
        heldOutSamples: 2,
        onProgress: (line) => lines.push(line),
      }).finally(() => models.close());
      assert.equal(r.persona, 'ok-olga');
      assert.equal(r.runs.length, 2, 'consensus on and off');
      for (const run of r.runs) {
        assert.ok(run.steps > 0 && run.trained > 0, `${run.steps} LoRA versions from ${run.trained} samples`);
        assert.ok(run.adversaryTrained > 0, 'the adversary was trained on too');
        assert.deepEqual(Object.keys(run.trainSatisfaction).sort(), [ADVERSARY_ID, 'quinn-1', 'quinn-2']);
        for (const v of Object.values(run.trainSatisfaction)) assert.ok(v >= 0 && v <= 1);
      }
      assert.ok(lines.length > 0, 'progress was reported');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
