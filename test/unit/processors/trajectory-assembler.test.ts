/** Rollout trajectories from turns and the verifier's outcome, pure logic (processors/trajectory-assembler/). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TrajectoryCore } from '../../../processors/index.ts';
import type { Trajectory, TrajectoryState, Turn } from '../../../schemas/index.ts';
import { exampleReward, exampleTurn } from '../../support/fixtures.ts';

const SESSION = 'gym-s1';
const meta = { gym_task: 't', gym_group: 'g', gym_rollout: '0' };
const turn = (id: string, completedAt: number, over: Partial<Turn> = {}): Turn =>
  exampleTurn({ turnId: id, sessionId: SESSION, completedAt, metadata: meta, ...over });
const reward = (turnIds: string[], split: 'TRAIN' | 'EVAL' = 'TRAIN') =>
  exampleReward({
    sessionId: SESSION,
    turnIds,
    rollout: { suite: 's', taskId: 't', groupId: 'g', batchId: 'b', index: 0, groupSize: 2, batchGroups: 1, split },
  });

function store() {
  const m = new Map<string, TrajectoryState>();
  return Object.assign(m, { put: (k: string, v: TrajectoryState) => void m.set(k, v) });
}

describe('TrajectoryCore', () => {
  it('turns then the outcome: the listed steps in the listed order, once', () => {
    const st = store();
    const out: Trajectory[] = [];
    const core = new TrajectoryCore();
    core.handle(
      [
        { topicId: 'turns', value: turn('a', 2) },
        { topicId: 'turns', value: turn('b', 1) },
        { topicId: 'turns', value: turn('a', 2) },
      ],
      st,
      0,
      (t) => out.push(t),
    );
    assert.equal(out.length, 0, 'no outcome yet');
    core.handle([{ topicId: 'rewards', value: reward(['a', 'b']) }], st, 1, (t) => out.push(t));
    assert.equal(out.length, 1);
    assert.deepEqual(
      out[0].steps.map((s) => s.turnId),
      ['a', 'b'],
    );
    assert.equal(out[0].missingTurns, 0);
    core.handle(
      [
        { topicId: 'turns', value: turn('c', 3) },
        { topicId: 'rewards', value: reward(['a']) },
      ],
      st,
      2,
      (t) => out.push(t),
    );
    assert.equal(out.length, 1, 'a finished rollout ignores later turns and outcomes');
  });

  it('the outcome before its turns waits for them; one missing is let go after settleMs, counted', () => {
    const st = store();
    const out: Trajectory[] = [];
    const core = new TrajectoryCore({ settleMs: 100 });
    core.handle(
      [
        { topicId: 'rewards', value: reward(['a', 'b']) },
        { topicId: 'turns', value: turn('a', 1) },
      ],
      st,
      0,
      (t) => out.push(t),
    );
    core.punctuate(st, 99, (t) => out.push(t));
    assert.equal(out.length, 0);
    core.punctuate(st, 100, (t) => out.push(t));
    assert.equal(out.length, 1);
    assert.equal(out[0].missingTurns, 1);
    assert.deepEqual(
      out[0].steps.map((s) => s.turnId),
      ['a'],
    );
  });

  it('an outcome that lists no turns takes the session’s steps read within settleMs, in completion order', () => {
    const st = store();
    const out: Trajectory[] = [];
    const core = new TrajectoryCore({ settleMs: 50 });
    core.handle(
      [
        { topicId: 'turns', value: turn('x', 9) },
        { topicId: 'rewards', value: reward([]) },
        { topicId: 'turns', value: turn('y', 3) },
      ],
      st,
      0,
      (t) => out.push(t),
    );
    core.punctuate(st, 50, (t) => out.push(t));
    assert.deepEqual(
      out[0].steps.map((s) => s.turnId),
      ['y', 'x'],
    );
  });

  it('turns without rollout metadata, side turns and EVAL outcomes are not joined; rollouts without an outcome are forgotten', () => {
    const st = store();
    const abandoned: string[] = [];
    const core = new TrajectoryCore({ abandonMs: 10 }, { abandoned: (s) => abandoned.push(s) });
    const emit = () => assert.fail('nothing to emit');
    core.handle(
      [
        { topicId: 'turns', value: turn('p', 1, { metadata: {} }) },
        { topicId: 'turns', value: turn('q', 1, { turnType: 'SIDE' }) },
        { topicId: 'rewards', value: reward(['p'], 'EVAL') },
      ],
      st,
      0,
      emit,
    );
    assert.equal(st.size, 0);
    core.handle([{ topicId: 'turns', value: turn('r', 1) }], st, 0, emit);
    core.punctuate(st, 10, emit);
    assert.deepEqual(abandoned, [SESSION]);
    assert.equal(st.size, 0);
  });
});
