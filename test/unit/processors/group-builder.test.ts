/** GRPO advantages and rollout batches → samples, pure logic (processors/group-builder/). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchCore, batchSamples, groupAdvantages } from '../../../processors/index.ts';
import type { BatchState, Sample, Trajectory } from '../../../schemas/index.ts';
import { exampleReward, exampleTrajectory, exampleTrajectoryStep } from '../../support/fixtures.ts';

/** Rollout `index` of group `group` (size `size`) in batch `batch` (of `groups` groups), with `steps` model calls. */
function rollout(
  batch: string,
  group: string,
  index: number,
  reward: number,
  opts: { size?: number; groups?: number; steps?: number } = {},
): Trajectory {
  const sessionId = `${group}-r${index}`;
  const steps = Array.from({ length: opts.steps ?? 1 }, (_, k) =>
    exampleTrajectoryStep({ turnId: `${sessionId}-t${k}`, responseTokenIds: [10 + k, 11], responseLogprobs: [-1, -2] }),
  );
  return exampleTrajectory({
    sessionId,
    steps,
    reward: exampleReward({
      sessionId,
      reward,
      turnIds: steps.map((s) => s.turnId),
      rollout: {
        suite: 's',
        taskId: group,
        groupId: group,
        batchId: batch,
        index,
        groupSize: opts.size ?? 4,
        batchGroups: opts.groups ?? 1,
        split: 'TRAIN',
      },
    }),
  });
}

describe('groupAdvantages', () => {
  it('r − mean, ÷ std by default; all equal is no signal', () => {
    const a = groupAdvantages([1, 0, 0, 0])!;
    const std = Math.sqrt(0.75 * 0.25);
    assert.ok(Math.abs(a[0] - 0.75 / std) < 1e-4 && Math.abs(a[1] + 0.25 / std) < 1e-4);
    assert.ok(Math.abs(a.reduce((x, y) => x + y, 0)) < 1e-9, 'they sum to 0');
    assert.deepEqual(groupAdvantages([1, 0, 0, 0], false), [0.75, -0.25, -0.25, -0.25]);
    assert.equal(groupAdvantages([1, 1, 1]), null);
    assert.equal(groupAdvantages([0, 0]), null);
    assert.equal(groupAdvantages([]), null);
  });
});

describe('batchSamples', () => {
  it('every step of a trajectory gets its advantage; all-equal and short groups are skipped and reported', () => {
    const ts = [
      rollout('b', 'g1', 0, 1, { size: 2, groups: 3, steps: 2 }),
      rollout('b', 'g1', 1, 0, { size: 2, groups: 3 }),
      rollout('b', 'g2', 0, 1, { size: 2, groups: 3 }),
      rollout('b', 'g2', 1, 1, { size: 2, groups: 3 }),
      rollout('b', 'g3', 0, 0, { size: 2, groups: 3 }),
    ];
    const { samples, report } = batchSamples('b', ts, { normalizeStd: false, now: 5 });
    assert.deepEqual(report, {
      batchId: 'b',
      trajectories: 5,
      groups: 3,
      trained: 1,
      skippedEqual: 1,
      incomplete: 1,
      untrainableSteps: 0,
      samples: 3,
    });
    assert.deepEqual(
      samples.map((s) => [s.turnId, s.reward, s.group?.rolloutIndex]),
      [
        ['g1-r0-t0', 0.5, 0],
        ['g1-r0-t1', 0.5, 0],
        ['g1-r1-t0', -0.5, 1],
      ],
    );
    for (const s of samples) {
      assert.equal(s.method, 'RL');
      assert.equal(s.teacherLogprobs, null);
      assert.equal(s.group?.batchSamples, 3, 'every sample says how many its batch has');
      assert.equal(s.sampleId, `${s.turnId}:GRPO`);
      assert.deepEqual(s.tokens, [...ts[0].steps[0].promptTokenIds, ...(s.turnId.endsWith('t1') ? [11, 11] : [10, 11])]);
      assert.deepEqual(s.lossMask, [1, 1]);
      assert.equal(s.createdAt, 5);
    }
  });

  it('untokenized or empty steps are counted, not trained', () => {
    const t = rollout('b', 'g', 0, 1, { size: 2 });
    t.steps.push(
      exampleTrajectoryStep({ turnId: 'x', tokenized: false }),
      exampleTrajectoryStep({ turnId: 'y', responseTokenIds: [], responseLogprobs: [] }),
    );
    const { samples, report } = batchSamples('b', [t, rollout('b', 'g', 1, 0, { size: 2 })]);
    assert.equal(report.untrainableSteps, 2);
    assert.equal(samples.length, 2);
  });
});

describe('BatchCore', () => {
  const store = () => {
    const m = new Map<string, BatchState>();
    return Object.assign(m, { put: (k: string, v: BatchState) => void m.set(k, v) });
  };

  it('releases a batch once it has all its trajectories, and ignores late or repeated ones', () => {
    const st = store();
    const out: Sample[] = [];
    const reports: unknown[] = [];
    const core = new BatchCore({}, { batch: (r) => reports.push(r) });
    const a = rollout('b1', 'g', 0, 1, { size: 2 });
    core.handle([a, a], st, 0, (s) => out.push(s));
    assert.equal(out.length, 0, 'one of two');
    core.handle([rollout('b1', 'g', 1, 0, { size: 2 })], st, 1, (s) => out.push(s));
    assert.equal(out.length, 2);
    assert.equal(reports.length, 1);
    core.handle([rollout('b1', 'g', 1, 0, { size: 2 })], st, 2, (s) => out.push(s));
    assert.equal(out.length, 2, 'a late trajectory of a released batch is ignored');
    assert.equal(st.get('b1')?.done, true);
  });

  it('a batch still short after batchTimeoutMs is released with the complete groups; old finished batches are forgotten', () => {
    const st = store();
    const out: Sample[] = [];
    const timedOut: boolean[] = [];
    const core = new BatchCore({ batchTimeoutMs: 100, retainDoneMs: 50 }, { batch: (_r, t) => timedOut.push(t) });
    core.handle(
      [
        rollout('b2', 'g1', 0, 1, { size: 2, groups: 2 }),
        rollout('b2', 'g1', 1, 0, { size: 2, groups: 2 }),
        rollout('b2', 'g2', 0, 1, { size: 2, groups: 2 }),
      ],
      st,
      0,
      (s) => out.push(s),
    );
    core.punctuate(st, 99, (s) => out.push(s));
    assert.equal(out.length, 0);
    core.punctuate(st, 100, (s) => out.push(s));
    assert.deepEqual(timedOut, [true]);
    assert.deepEqual(
      out.map((s) => s.group?.groupId),
      ['g1', 'g1'],
      'the complete group trains; the short one is dropped',
    );
    core.punctuate(st, 149, () => assert.fail('nothing more'));
    assert.ok(st.has('b2'));
    core.punctuate(st, 150, () => assert.fail('nothing more'));
    assert.ok(!st.has('b2'));
  });
});
