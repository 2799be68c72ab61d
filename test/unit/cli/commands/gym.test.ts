/**
 * `turnstream gym`'s flags: the run's shape (`--quick` or the standard run, a value given keeping
 * its place) and `--base-rates` (rollouts per task, 4 by default; a flag that shapes training is
 * refused, as a bad `--n` is, with one line and exit 2 before any model loads); `--merge` joins
 * the reports of single-seed runs and refuses anything that would run something.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { baseRateShape, gymRunShape, gymTuning, mergeFlagsCheck } from '../../../../cli/commands/gym.ts';
import { gymSettings } from '../../../../gym/runner/gym-options.ts';
import { runIdentity, summarize, type GymResult } from '../../../../gym/runner/run-gym.ts';
import { seedRun, stepRecord } from '../../../support/gym-runs.ts';
import { refusal } from '../../../support/refusal.ts';
import { REPO_ROOT } from '../../../support/stack.ts';
import { suiteTempDir } from '../../../support/temp-dir.ts';

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
      loraLayers: undefined,
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
      loraLayers: undefined,
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
    // --lora-layers: the adapter on the last n layers, 0 = every layer; an integer
    assert.equal(gymTuning({ loraLayers: '0' }).loraLayers, 0);
    assert.equal(gymTuning({ loraLayers: '12' }).loraLayers, 12);
    for (const bad of ['-1', '2.5', 'all'])
      assert.deepEqual(
        refusal(() => gymTuning({ loraLayers: bad })),
        {
          message: `--lora-layers must be an integer ≥ 0 (got ${bad})`,
          code: 'TS_ERR_INVALID_INPUT',
          param: '--lora-layers',
        },
      );
  });

  it('--base-rates: 4 rollouts per task unless --n says; one is enough to measure', () => {
    assert.deepEqual(baseRateShape({}), { n: 4, devOnly: false });
    assert.deepEqual(baseRateShape({ n: '1' }), { n: 1, devOnly: false });
    // --dev-only shapes training, but with --base-rates it keeps the test split unmeasured
    assert.deepEqual(baseRateShape({ devOnly: true }), { n: 4, devOnly: true });
    assert.deepEqual(baseRateShape({ n: '16', temperature: '0.9', maxTokens: '64', parallel: '2', json: true, tasks: 'mine.jsonl' }), {
      n: 16,
      devOnly: false,
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

describe('turnstream gym --merge', () => {
  const dir = suiteTempDir('turnstream-gym-merge-');
  const tasks = { train: ['a'], dev: ['d1'], test: ['t1', 't2', 't3'] };
  const id = runIdentity(
    gymSettings({ tasks: [], suite: 'suite', brokers: [], registryUrl: '', model: { name: 'm', path: '', sha256: '' } }),
  );
  const report = (seed: number, wall: number): GymResult => ({
    topicPrefix: `gym-${seed}.`,
    ...summarize([seedRun(seed, { t1: [1, 0.5], t2: [1, 1], t3: [0.5, 0.5] }, [stepRecord({})])], id, tasks, wall),
  });
  const gym = (args: string[]) =>
    spawnSync(process.execPath, ['bin/turnstream.js', 'gym', ...args], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, LOG_LEVEL: 'warn' },
    });

  it('takes a run’s folder or its gym.json, writes the joined report and prints it', () => {
    mkdirSync(join(dir(), 'run-1'));
    writeFileSync(join(dir(), 'run-1', 'gym.json'), JSON.stringify(report(1, 100)));
    writeFileSync(join(dir(), 'two.json'), JSON.stringify(report(2, 50)));
    const out = join(dir(), 'out');
    const r = gym(['--merge', join(dir(), 'run-1'), join(dir(), 'two.json'), '--out', out, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const result = JSON.parse(r.stdout) as GymResult;
    assert.deepEqual(
      result.per_seed.map((x) => x.seed),
      [1, 2],
    );
    assert.equal(result.wall_s, 150);
    assert.deepEqual(
      result.merged?.map((m) => [m.seeds, m.wall_s]),
      [
        [[1], 100],
        [[2], 50],
      ],
    );
    const [written] = readdirSync(out);
    assert.match(written, /^suite-merged-/);
    for (const f of ['gym.json', 'gym.csv', 'gym.svg', 'replies.md']) assert.ok(existsSync(join(out, written, f)), f);
  });

  it('refuses what would run something, and a report it cannot read, with one line and exit 2', () => {
    assert.deepEqual(
      refusal(() => mergeFlagsCheck({ merge: ['a', 'b'], steps: '3', tasks: 'x.jsonl', agent: 'openclaw' })),
      {
        message: '--merge joins finished runs and runs nothing: --steps, --tasks, --agent do not apply',
        code: 'TS_ERR_INVALID_INPUT',
        param: '--steps',
      },
    );
    const flag = gym(['--merge', 'a', 'b', '--seed', '2']);
    assert.equal(flag.status, 2, flag.stderr);
    assert.equal(flag.stderr, 'turnstream: --merge joins finished runs and runs nothing: --seed does not apply (TS_ERR_INVALID_INPUT)\n');
    writeFileSync(join(dir(), 'two.json'), JSON.stringify(report(2, 50)));
    const missing = join(dir(), 'nowhere');
    const gone = gym(['--merge', missing, join(dir(), 'two.json')]);
    assert.equal(gone.status, 2, gone.stderr);
    assert.equal(gone.stderr, `turnstream: --merge: cannot read ${missing}: ENOENT (TS_ERR_INVALID_INPUT)\n`);
    writeFileSync(join(dir(), 'bad.json'), '{"runs": [');
    const bad = gym(['--merge', join(dir(), 'bad.json'), join(dir(), 'two.json')]);
    assert.equal(bad.status, 2, bad.stderr);
    assert.equal(bad.stderr, `turnstream: --merge: ${join(dir(), 'bad.json')} is not JSON (TS_ERR_INVALID_INPUT)\n`);
  });
});
