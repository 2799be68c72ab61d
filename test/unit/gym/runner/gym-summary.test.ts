/** A gym run's figures: test reported, dev beside it, each part of the verdict, per seed; the KL guard's undone steps and the mismatch counted. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gymSettings } from '../../../../gym/runner/gym-options.ts';
import { gymCsv } from '../../../../gym/runner/gym-report.ts';
import { summarize } from '../../../../gym/runner/run-gym.ts';
import type { EvalPoint, SeedResult, StepRecord } from '../../../../gym/runner/run-seed.ts';

const point = (step: number, split: 'dev' | 'test', perTask: Record<string, [content: number, format: number]>): EvalPoint => {
  const ids = Object.keys(perTask);
  // A task passes when both parts do; here the parts' rates are given and pass = min of them.
  const pass = Object.fromEntries(ids.map((t) => [t, Math.min(...perTask[t])]));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    step,
    version: step,
    split,
    passAt1: mean(Object.values(pass)),
    perTask: pass,
    parts: { content: mean(ids.map((t) => perTask[t][0])), format: mean(ids.map((t) => perTask[t][1])) },
    perTaskParts: Object.fromEntries(ids.map((t) => [t, { content: perTask[t][0], format: perTask[t][1] }])),
  };
};

const step = (over: Partial<StepRecord>): StepRecord => ({
  batch: 0,
  step: 1,
  version: 0,
  madeVersion: 1,
  tasks: ['a'],
  trainPass: 0.5,
  groupsTrained: 1,
  groupsEqual: 0,
  rolloutSeconds: 1,
  trainSeconds: 1,
  ...over,
});

const seed = (n: number, testAfter: Record<string, [number, number]>, steps: StepRecord[]): SeedResult => ({
  seed: n,
  modelId: `m${n}`,
  evals: [
    point(0, 'test', { t1: [0.5, 0], t2: [1, 0.25], t3: [0, 0] }),
    point(0, 'dev', { d1: [0.5, 0.5] }),
    point(5, 'dev', { d1: [0.75, 0.5] }),
    point(10, 'dev', { d1: [1, 0.75] }),
    point(10, 'test', testAfter),
  ],
  steps,
  batches: steps.length,
  time: { rollouts: 10, verifier: 1, training: 20, eval: 5 },
  replies: { before: [], after: [] },
  rejectedSteps: steps.filter((s) => s.rejected).length,
});

describe('gym summary', () => {
  const s = gymSettings({ tasks: [], suite: 'suite', brokers: [], registryUrl: '', model: { name: 'm', path: '', sha256: '' } });
  const runs = [
    seed(1, { t1: [0.5, 0.5], t2: [1, 0.75], t3: [0, 0.5] }, [
      step({ mismatch: { absLogprob: 0.1, kl: 0.01, truncated: 0.02, tisMean: 1.1 } }),
      step({ step: null, madeVersion: null, rejected: true }),
    ]),
    seed(2, { t1: [0.5, 0.25], t2: [1, 0.5], t3: [0, 0.25] }, [
      step({ mismatch: { absLogprob: 0.3, kl: 0.03, truncated: 0.04, tisMean: 1.3 } }),
    ]),
  ];
  const r = summarize(runs, s, { train: ['a'], dev: ['d1'], test: ['t1', 't2', 't3'] }, 12.34);

  it('reports the test split (before/after, per seed) with the dev split beside it', () => {
    assert.equal(r.before, r.test_split.before);
    assert.ok(Math.abs(r.before - (0 + 0.25 + 0) / 3) < 1e-12);
    assert.ok(Math.abs(r.after - ((0.5 + 0.75 + 0) / 3 + (0.25 + 0.5 + 0) / 3) / 2) < 1e-12);
    assert.deepEqual(
      r.per_seed.map((x) => x.seed),
      [1, 2],
    );
    assert.deepEqual(
      r.dev_split.curve.map((c) => c.step),
      [0, 5, 10],
    );
    assert.deepEqual([r.dev_split.before, r.dev_split.after], [0.5, 0.75]);
    assert.deepEqual(r.tasks, { train: ['a'], dev: ['d1'], test: ['t1', 't2', 't3'] });
  });

  it('each part before and after with its own paired test: the format rose, the content did not move', () => {
    assert.deepEqual(Object.keys(r.test_split.parts), ['content', 'format']);
    assert.equal(r.test_split.parts.content.before, r.test_split.parts.content.after);
    assert.equal(r.test_split.parts.content.p_value, 1, 'no pair moved');
    assert.ok(r.test_split.parts.format.after > r.test_split.parts.format.before);
    assert.ok(r.test_split.parts.format.p_value < 0.1, `format p ${r.test_split.parts.format.p_value}`);
    assert.deepEqual(r.per_seed[0].parts.format, { before: 0.25 / 3, after: 1.75 / 3 });
  });

  it('a step undone by the KL guard is counted; the mismatch is the mean over the steps that published', () => {
    assert.equal(r.groups.rejectedSteps, 1);
    assert.equal(r.mismatch.steps, 2);
    assert.ok(Math.abs(r.mismatch.absLogprob - 0.2) < 1e-12 && Math.abs(r.mismatch.truncated - 0.03) < 1e-12);
    assert.equal(r.wall_s, 12.3);
  });

  it('the CSV has a row per seed, step, split, task and part', () => {
    const rows = gymCsv({ ...r, topicPrefix: 'x' })
      .trim()
      .split('\n');
    assert.equal(rows[0], 'seed,step,version,split,task,part,pass_at_1');
    assert.ok(rows.includes('1,10,10,test,t3,format,0.5'));
    assert.ok(rows.includes('2,0,0,dev,all,all,0.5'));
  });
});
