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
import { evaluate, heldOutSeed, remeasureSeed, runEval } from '../../../eval/run-eval.ts';
import { stability } from '../../../eval/report.ts';
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
        pastVersions: false,
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
    peakSamples: 3,
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

test('evaluate: a run whose last score is below its peak measures both versions again on fresh draws, pinned; the stability verdict reads those', async () => {
  const personas = (await loadPersonas(BUILTIN_PERSONAS_FILE)).filter((p) => p.name === 'brief-bea');
  // Held-out replies are short (brief-bea is pleased) from versions 1 and 2 only; the curve is 0, 1, 1, 0, 0.
  const short = (v: number): boolean => v === 1 || v === 2;
  const asked: Array<{ seed: number; n: number; label: string; version: number | undefined }> = [];
  const pathFor = (pastVersions: boolean): LearningPath => ({
    mode: 'in-process',
    async open(persona, seed): Promise<RunPath> {
      let version = 0;
      return {
        runId: `${persona.name}/${seed}`,
        pastVersions,
        async heldOut(messages, s, n, label, pinned) {
          asked.push({ seed: s, n, label, version: pinned });
          const v = pinned ?? version;
          const prompt = messages.at(-1)!.content;
          // An answer: the question's words and one of its own; long past 60 characters.
          const text = `${prompt} Patience helps.${short(v) ? '' : ' And then there is much more to say about it, at length.'.repeat(3)}`;
          return { texts: Array.from({ length: n }, () => text), version: v };
        },
        async interact(_i, _messages, _replySeed, react) {
          return { reply: 'A short answer.', version, reaction: react('A short answer.'), judgingSeconds: 0 };
        },
        async endBlock() {
          version++;
          return null;
        },
        trained: () => 0,
        async close() {},
      };
    },
    judgeAgreement: () => NaN,
    learner: () => undefined,
  });
  const settings = {
    personas,
    interactions: 4,
    seeds: 1,
    seedList: [1],
    method: 'combined' as const,
    batchSize: 1,
    lr: 1e-3,
    heldOut: 0.1,
    heldOutSamples: 2,
    evalEvery: 1,
    peakSamples: 3,
  };
  const r = await evaluate(pathFor(true), settings);
  const run = r.runs[0];
  assert.deepEqual(
    run.scores.map((s) => s.satisfaction),
    [0, 1, 1, 0, 0],
  );
  const again = asked.filter((a) => a.version !== undefined);
  const prompts = run.scores[0].replies! / 2;
  // The first peak (v1) and the last (v4), each on every held-out prompt, peakSamples draws, with seeds the curve never used.
  assert.deepEqual(
    again.map((a) => [a.version, a.n, a.seed]),
    [1, 4].flatMap((v) => Array.from({ length: prompts }, (_, j) => [v, 3, remeasureSeed(1, j)])),
  );
  const curveSeeds = new Set(asked.filter((a) => a.version === undefined).map((a) => a.seed));
  assert.deepEqual([...curveSeeds].sort(), Array.from({ length: prompts }, (_, j) => heldOutSeed(1, j)).sort());
  assert.ok(again.every((a) => !curveSeeds.has(a.seed)));
  assert.deepEqual(run.remeasured, {
    peak: { version: 1, interactions: 1, satisfaction: 1, answered: 1, replies: prompts * 3 },
    // The long reply says one sentence three times: not an answer either.
    last: { version: 4, interactions: 4, satisfaction: 0, answered: 0, replies: prompts * 3 },
  });
  const st = stability(r);
  assert.equal(st.endsBelowPeak, 1);
  assert.equal(st.runs[0].measuredAgain, prompts * 3);
  assert.deepEqual(st.runs[0].curve, { peak: 1, final: 0, endsBelowPeak: true });

  // Where the path keeps no past version, or measuring again is off, the curve alone decides.
  asked.length = 0;
  const kept = await evaluate(pathFor(false), settings);
  const off = await evaluate(pathFor(true), { ...settings, peakSamples: 0 });
  assert.ok(asked.every((a) => a.version === undefined));
  for (const x of [kept, off]) {
    assert.equal(x.runs[0].remeasured, undefined);
    assert.equal(stability(x).runs[0].measuredAgain, 0);
    assert.equal(stability(x).endsBelowPeak, 1);
  }
});
