/** A gym run's figures: test reported, dev beside it, each part of the verdict, per seed; the KL guard's undone steps and the mismatch counted. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gymSettings } from '../../../../gym/runner/gym-options.ts';
import { gymCsv, gymRepliesMarkdown } from '../../../../gym/runner/gym-report.ts';
import { runIdentity, summarize } from '../../../../gym/runner/run-gym.ts';
import { meanWords } from '../../../../gym/runner/run-seed.ts';
import { seedRun as seed, stepRecord as step } from '../../../support/gym-runs.ts';

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
  const r = summarize(runs, runIdentity(s), { train: ['a'], dev: ['d1'], test: ['t1', 't2', 't3'] }, 12.34);

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

  it('replies.md names the split whose replies it holds: test, or dev in a tuning run (--dev-only)', () => {
    assert.match(gymRepliesMarkdown({ ...r, topicPrefix: 'x' }).split('\n')[0]!, /^# suite: test answers before and after/);
    const tuning = runIdentity(
      gymSettings({ tasks: [], suite: 'suite', brokers: [], registryUrl: '', model: { name: 'm', path: '', sha256: '' }, devOnly: true }),
    );
    const d = summarize(runs, tuning, { train: ['a'], dev: ['d1'], test: ['t1'] }, 1);
    assert.match(gymRepliesMarkdown({ ...d, topicPrefix: 'x' }).split('\n')[0]!, /^# suite: dev answers before and after/);
  });

  it("a batch's reply length is the mean words of its final answers, a rollout without one counting 0", () => {
    assert.equal(meanWords(['Yes.', 'No, fish cannot walk.', null, '  ']), (1 + 4 + 0 + 0) / 4);
    assert.equal(meanWords([]), 0);
  });
});
