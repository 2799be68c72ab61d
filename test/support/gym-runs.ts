/** A gym seed's records for tests of the figures made from them: eval points with content and format parts, steps, seeds. */
import type { EvalPoint, SeedResult, StepRecord } from '../../gym/runner/run-seed.ts';

export const evalPoint = (step: number, split: 'dev' | 'test', perTask: Record<string, [content: number, format: number]>): EvalPoint => {
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

export const stepRecord = (over: Partial<StepRecord>): StepRecord => ({
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

export const seedRun = (n: number, testAfter: Record<string, [number, number]>, steps: StepRecord[]): SeedResult => ({
  seed: n,
  modelId: `m${n}`,
  evals: [
    evalPoint(0, 'test', { t1: [0.5, 0], t2: [1, 0.25], t3: [0, 0] }),
    evalPoint(0, 'dev', { d1: [0.5, 0.5] }),
    evalPoint(5, 'dev', { d1: [0.75, 0.5] }),
    evalPoint(10, 'dev', { d1: [1, 0.75] }),
    evalPoint(10, 'test', testAfter),
  ],
  steps,
  batches: steps.length,
  time: { rollouts: 10, verifier: 1, training: 20, eval: 5 },
  replies: { before: [], after: [] },
  rejectedSteps: steps.filter((s) => s.rejected).length,
});
