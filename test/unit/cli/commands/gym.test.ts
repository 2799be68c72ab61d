/**
 * `turnstream gym`'s flags: the run's shape (`--quick` or the standard run, a value given keeping
 * its place) and `--base-rates` (rollouts per task, 4 by default; a flag that shapes training is
 * refused, as a bad `--n` is, with one line and exit 2 before any model loads).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { baseRateShape, gymRunShape, gymTuning } from '../../../../cli/commands/gym.ts';
import { refusal } from '../../../support/refusal.ts';
import { REPO_ROOT } from '../../../support/stack.ts';

describe('turnstream gym flags', () => {
  it('the standard run and --quick; a value given keeps its place', () => {
    assert.deepEqual(gymRunShape({}), {
      steps: 30,
      seeds: 3,
      rolloutsPerTask: 8,
      tasksPerStep: 4,
      evalEvery: 5,
      evalSamples: 4,
      testSamples: 8,
    });
    assert.deepEqual(gymRunShape({ quick: true }), {
      steps: 6,
      seeds: 1,
      rolloutsPerTask: 4,
      tasksPerStep: 4,
      evalEvery: 3,
      evalSamples: 2,
      testSamples: 2,
    });
    assert.deepEqual(gymRunShape({ quick: true, steps: '9', n: '6' }), {
      steps: 9,
      seeds: 1,
      rolloutsPerTask: 6,
      tasksPerStep: 4,
      evalEvery: 3,
      evalSamples: 2,
      testSamples: 2,
    });
    // A group of one rollout has no relative reward.
    assert.deepEqual(
      refusal(() => gymRunShape({ n: '1' })),
      { message: '--n must be an integer ≥ 2 (got 1)', code: 'TS_ERR_INVALID_INPUT', param: '--n' },
    );
  });

  it('--lr and --kl: numbers, checked before anything starts; --kl 0 turns the KL term off', () => {
    assert.deepEqual(gymTuning({ lr: '5e-4', kl: '0' }), {
      temperature: undefined,
      topP: undefined,
      maxTokens: undefined,
      lr: 5e-4,
      klCoef: 0,
      tisCap: undefined,
      taskSampling: undefined,
      reward: undefined,
      lossAggregation: undefined,
      parallel: undefined,
    });
    assert.deepEqual(gymTuning({ topP: '0.9', tisCap: '0', taskSampling: 'signal', reward: 'partial', lossAgg: 'sample' }), {
      temperature: undefined,
      topP: 0.9,
      maxTokens: undefined,
      lr: undefined,
      klCoef: undefined,
      tisCap: 0,
      taskSampling: 'signal',
      reward: 'partial',
      lossAggregation: 'sample',
      parallel: undefined,
    });
    assert.equal(refusal(() => gymTuning({ topP: '1.5' })).message, '--top-p must be in (0, 1] (got 1.5)');
    assert.equal(refusal(() => gymTuning({ taskSampling: 'hard' })).message, '--task-sampling must be uniform or signal (got hard)');
    assert.equal(refusal(() => gymTuning({ reward: 'half' })).message, '--reward must be pass or partial (got half)');
    assert.equal(refusal(() => gymTuning({ lossAgg: 'seq' })).message, '--loss-agg must be token or sample (got seq)');
    assert.equal(gymTuning({}).klCoef, undefined, 'unset: the run’s default');
    assert.deepEqual(
      refusal(() => gymTuning({ kl: '-0.1' })),
      {
        message: '--kl must be a non-negative number (got -0.1)',
        code: 'TS_ERR_INVALID_INPUT',
        param: '--kl',
      },
    );
    assert.equal(refusal(() => gymTuning({ lr: '0' })).message, '--lr must be a positive number (got 0)');
  });

  it('--base-rates: 4 rollouts per task unless --n says; one is enough to measure', () => {
    assert.deepEqual(baseRateShape({}), { n: 4 });
    assert.deepEqual(baseRateShape({ n: '1' }), { n: 1 });
    assert.deepEqual(baseRateShape({ n: '16', temperature: '0.9', maxTokens: '64', parallel: '2', json: true, tasks: 'mine.jsonl' }), {
      n: 16,
    });
    for (const bad of ['0', '-2', '2.5', 'four'])
      assert.deepEqual(
        refusal(() => baseRateShape({ n: bad })),
        {
          message: `--n must be an integer ≥ 1 (got ${bad})`,
          code: 'TS_ERR_INVALID_INPUT',
          param: '--n',
        },
      );
  });

  it('--base-rates trains nothing: the flags that shape training are refused, each named', () => {
    assert.deepEqual(
      refusal(() => baseRateShape({ steps: '3' })),
      {
        message: '--base-rates measures the base model and trains nothing: --steps does not apply',
        code: 'TS_ERR_INVALID_INPUT',
        param: '--steps',
      },
    );
    assert.equal(
      refusal(() =>
        baseRateShape({ quick: true, seeds: '2', seed: '1', batch: '2', evalEvery: '1', evalSamples: '1', lr: '0.1', keepInfra: true }),
      ).message,
      '--base-rates measures the base model and trains nothing: --quick, --seeds, --seed, --batch, --eval-every, --eval-samples, --lr, --keep-infra do not apply',
    );
  });

  it('a bad --base-rates flag ends the command with one line and exit 2, before any model loads', () => {
    const run = (args: string[]) =>
      spawnSync(process.execPath, ['bin/turnstream.js', 'gym', '--base-rates', ...args], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        timeout: 120_000,
        // A model that cannot be had: the refusal must come first.
        env: { ...process.env, TURNSTREAM_MODEL: '/nonexistent/model.gguf', LOG_LEVEL: 'warn' },
      });
    const steps = run(['--steps', '3', '--json']);
    assert.equal(steps.status, 2, steps.stderr);
    assert.equal(steps.stdout, '');
    assert.equal(
      steps.stderr,
      'turnstream: --base-rates measures the base model and trains nothing: --steps does not apply (TS_ERR_INVALID_INPUT)\n',
    );
    const n = run(['--n', '0']);
    assert.equal(n.status, 2, n.stderr);
    assert.equal(n.stderr, 'turnstream: --n must be an integer ≥ 1 (got 0) (TS_ERR_INVALID_INPUT)\n');
  });
});
