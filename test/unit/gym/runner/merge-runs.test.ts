/**
 * `gym --merge`: runs of single seeds joined give the figures the seeds would have given run
 * together (the paired test over every (seed, task) pair), the wall clock summed; runs of
 * different things, a seed twice, and what is not a gym report are refused, naming why.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gymSettings } from '../../../../gym/runner/gym-options.ts';
import { mergeGymResults } from '../../../../gym/runner/merge-runs.ts';
import { runIdentity, summarize, type GymResult } from '../../../../gym/runner/run-gym.ts';
import type { SeedResult } from '../../../../gym/runner/run-seed.ts';
import { seedRun, stepRecord } from '../../../support/gym-runs.ts';
import { refusal } from '../../../support/refusal.ts';

const tasks = { train: ['a'], dev: ['d1'], test: ['t1', 't2', 't3'] };
const options = { tasks: [], suite: 'suite', brokers: [], registryUrl: '', model: { name: 'm', path: '', sha256: '' } };
const settings = gymSettings(options);
const seeds = [
  seedRun(1, { t1: [1, 0.5], t2: [1, 0.75], t3: [0.5, 0.5] }, [
    stepRecord({ mismatch: { absLogprob: 0.1, kl: 0.01, truncated: 0, tisMean: 1 } }),
  ]),
  seedRun(2, { t1: [0.5, 0.25], t2: [1, 0.5], t3: [0, 0.25] }, [stepRecord({ groupsTrained: 3 })]),
  seedRun(3, { t1: [1, 1], t2: [1, 1], t3: [1, 0.75] }, [stepRecord({ groupsEqual: 2 })]),
];
const report = (runs: SeedResult[], wall: number, prefix: string, id = runIdentity(settings)): GymResult => ({
  topicPrefix: prefix,
  ...summarize(runs, id, tasks, wall),
});

/** The message a merge of these (source, report) pairs is refused with. */
const why = (...runs: Array<[source: string, result: unknown]>): string =>
  refusal(() => mergeGymResults(runs.map(([source, result]) => ({ source, result: result as GymResult })))).message;

describe('gym --merge', () => {
  const together = report(seeds, 30, 'gym-all.');
  const merged = mergeGymResults([
    { source: 'one', result: report([seeds[0]], 12, 'gym-1.') },
    { source: 'rest', result: report([seeds[2], seeds[1]], 18.4, 'gym-23.') },
  ]);

  it('gives the figures the seeds give run together: per seed, per part, the paired test over every (seed, task) pair', () => {
    for (const k of [
      'before',
      'after',
      'test_split',
      'dev_split',
      'p_value',
      'test',
      'time',
      'groups',
      'mismatch',
      'steps',
      'settings',
    ] as const)
      assert.deepEqual(merged[k], together[k], k);
    assert.deepEqual(
      merged.per_seed.map((x) => x.seed),
      [1, 2, 3],
    );
    assert.equal(merged.test.n, 9, 'three seeds × three test tasks');
    assert.equal(merged.seeds, 3);
  });

  it('the wall clock is the runs’ own, summed, and each run is named with its seeds and topics', () => {
    assert.equal(merged.wall_s, 30.4);
    assert.deepEqual(merged.merged, [
      { source: 'one', topicPrefix: 'gym-1.', seeds: [1], wall_s: 12 },
      { source: 'rest', topicPrefix: 'gym-23.', seeds: [3, 2], wall_s: 18.4 },
    ]);
  });

  it('refuses runs of different things, naming the field that differs', () => {
    const other = runIdentity(gymSettings({ ...options, lr: 2e-3 }));
    assert.deepEqual(
      refusal(() =>
        mergeGymResults([
          { source: 'a', result: report([seeds[0]], 1, 'x.') },
          { source: 'b', result: report([seeds[1]], 1, 'y.', other) },
        ]),
      ),
      {
        message: '--merge: b is not a run of the same thing as a (settings.lr: 0.001 vs 0.002)',
        code: 'TS_ERR_INVALID_INPUT',
        param: '--merge',
      },
    );
    const first = report([seeds[0]], 1, 'x.');
    assert.equal(
      why(['a', first], ['b', report([seeds[1]], 1, 'y.', { ...runIdentity(settings), suite: 'other', n: 4 })]),
      '--merge: b is not a run of the same thing as a (suite: "suite" vs "other")',
      'the suite is named before the rest that differs',
    );
    assert.equal(
      why(['a', first], ['b', { ...report([seeds[1]], 1, 'y.'), tasks: { ...tasks, test: ['t1', 't2'] } }]),
      '--merge: b is not a run of the same thing as a (tasks.test.2: "t3" vs undefined)',
    );
  });

  it('refuses a seed twice, a single report, a merged report and what is not a gym report', () => {
    const one = report([seeds[0]], 1, 'x.');
    assert.equal(why(['a', one], ['b', report([seeds[0]], 1, 'y.')]), '--merge: seed 1 is in both a and b');
    assert.equal(why(['a', one]), '--merge needs at least two gym reports');
    assert.equal(
      why(['m', merged], ['a', report([seeds[1]], 1, 'x.')]),
      '--merge: m is itself a merged report; merge the runs it was made of',
    );
    for (const bad of [null, [], { runs: [] }, { suite: 'x' }, { ...one, runs: [{}] }, { ...one, runs: [{ ...seeds[0], evals: null }] }])
      assert.equal(why(['j', bad], ['a', one]), '--merge: j is not a gym report (gym.json with its runs)');
  });
});
