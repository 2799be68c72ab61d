/**
 * `turnstream eval` in-process, at toy size on a small random model: it runs the whole loop
 * (persona ↔ policy, embedded judge, samples, learner steps) and reports what the command's
 * JSON promises. The learning itself is measured by the real eval (docs/learning.md), not here.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BUILTIN_PERSONAS_FILE, loadPersonas } from '../../../eval/persona.ts';
import { evaluate, runEval } from '../../../eval/run-eval.ts';
import type { LearningPath, RunPath } from '../../../eval/learning-path.ts';
import { builtinEvalModels } from '../../../eval/eval-model.ts';
import { initCheckpoint, loadPolicy } from '../../../policy/index.ts';

test('runEval: versions, before/after in [0, 1], the paired test over the runs, and samples trained', { timeout: 240_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ts-eval-'));
  try {
    const base = await initCheckpoint(dir, { config: { contextLength: 192, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 }, seed: 1 });
    const teacherPolicy = await loadPolicy({ weightsDir: dir, version: 0 });
    const personas = (await loadPersonas(BUILTIN_PERSONAS_FILE)).filter((p) => p.name === 'brief-bea' || p.name === 'plain-pat');
    try {
      const r = await runEval({
        personas,
        models: builtinEvalModels({ baseUri: base.uri, teacherPolicy, lr: 1e-3 }),
        interactions: 4,
        seeds: 1,
        batchSize: 2,
        heldOut: 0.06,
        heldOutSamples: 2,
      });
      assert.equal(r.personas, 2);
      assert.equal(r.runs.length, 2, 'one run per persona and seed');
      assert.deepEqual(
        r.per_version.map((v) => [v.version, v.interactions]),
        [
          [0, 0],
          [1, 2],
          [2, 4],
        ],
      );
      for (const v of r.per_version) {
        assert.ok(v.satisfaction >= 0 && v.satisfaction <= 1);
        assert.deepEqual(Object.keys(v.byPersona).sort(), personas.map((p) => p.name).sort());
      }
      assert.equal(r.before, r.per_version[0].satisfaction);
      assert.equal(r.after, r.per_version.at(-1)!.satisfaction);
      assert.equal(r.statistic.n, 2);
      assert.ok(
        r.runs.every((run) => run.samples > 0 && run.steps.length === 2),
        'every step trained on samples',
      );
      for (const run of r.runs) {
        // The replies behind the first and last score: one per held-out prompt and sample, and they agree with it.
        const first = run.replies!.first;
        const last = run.replies!.last;
        assert.ok(first.length > 0 && first.length === last.length, 'replies of the first and the last version');
        assert.equal(first.filter((x) => x.satisfied).length / first.length, run.scores[0].satisfaction);
        assert.equal(last.filter((x) => x.satisfied).length / last.length, run.scores.at(-1)!.satisfaction);
        assert.equal(last.filter((x) => x.answered).length / last.length, run.scores.at(-1)!.answered);
        assert.ok(
          last.every((x) => x.answered || !x.satisfied),
          'only an answer can satisfy',
        );
      }
    } finally {
      teacherPolicy.dispose();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('evaluate: one loop over any learning path: blocks end in a step, scores at version 0, every evalEvery blocks and the last, each with the version that answered', async () => {
  const personas = (await loadPersonas(BUILTIN_PERSONAS_FILE)).filter((p) => p.name === 'brief-bea' || p.name === 'plain-pat');
  const calls: string[] = [];
  const opened: string[] = [];
  const progress: string[] = [];
  // A path whose model answers "yes" from version 2 on, and makes a version only when a block had a satisfied reply.
  const path: LearningPath = {
    mode: 'pipeline',
    async open(persona, seed): Promise<RunPath> {
      const runId = `${persona.name}/${seed}`;
      opened.push(runId);
      let version = 0;
      let pending = 0;
      let trained = 0;
      return {
        runId,
        async heldOut(messages, s, n, label) {
          calls.push(`${runId} heldOut ${label} n=${n}`);
          assert.equal(messages.at(-1)!.role, 'user');
          return {
            texts: Array.from({ length: n }, () =>
              version >= 2 ? 'Yes.' : 'Well, it depends on many things, so let me explain at length.',
            ),
            version,
          };
        },
        async interact(i, messages, replySeed, react) {
          assert.ok(Number.isInteger(replySeed) && replySeed >= 0);
          const reply = 'A short answer.';
          const reaction = react(reply);
          pending++;
          return { reply, version, reaction, judgingSeconds: 0 };
        },
        async endBlock(interactions) {
          calls.push(`${runId} endBlock ${interactions}`);
          trained += pending;
          pending = 0;
          version++;
          return null;
        },
        trained: () => trained,
        async close() {
          calls.push(`${runId} close`);
        },
      };
    },
    judgeAgreement: () => 0.5,
    learner: () => undefined,
  };
  const r = await evaluate(path, {
    personas,
    interactions: 5,
    seeds: 1,
    seedList: [1],
    method: 'combined',
    batchSize: 2,
    lr: 1e-3,
    heldOut: 0.06,
    heldOutSamples: 2,
    evalEvery: 2,
    onProgress: (line) => progress.push(line),
  });
  assert.deepEqual(opened, ['brief-bea/1', 'plain-pat/1']);
  // One progress line per run, in both modes: each scored version with its share.
  assert.equal(progress.length, 2);
  assert.match(
    progress[0],
    /^brief-bea\/1: v0 \d\.\d\d → v2 \d\.\d\d → v3 \d\.\d\d {2}\(satisfied during interactions: \d\/5; generation \d+ s, judging 0 s, training \d+ s, scoring \d+ s\)$/,
  );
  const bea = calls.filter((c) => c.startsWith('brief-bea/1'));
  // Blocks end after interactions 2, 4 and 5 (the last, partial); scored at 0, after block 2 and after the last.
  assert.deepEqual(
    bea.filter((c) => c.includes('endBlock')),
    ['brief-bea/1 endBlock 2', 'brief-bea/1 endBlock 4', 'brief-bea/1 endBlock 5'],
  );
  const run = r.runs[0];
  assert.deepEqual(
    run.scores.map((s) => [s.interactions, s.version]),
    [
      [0, 0],
      [4, 2],
      [5, 3],
    ],
  );
  assert.equal(bea.at(-1), 'brief-bea/1 close');
  assert.equal(run.samples, 5);
  assert.equal(run.talk!.length, 5);
  assert.equal(r.mode, 'pipeline');
  assert.equal(r.judgeAgreement, 0.5);
  assert.equal(r.statistic.n, 2);
});
