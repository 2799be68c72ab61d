/**
 * GRPO through Kafka: rollout turns (with their metadata) and the verifier's rewards → the
 * trajectory assembler → the group builder → samples with group-relative advantages for every
 * step, one batch in one transaction; the sample builder leaves rollout steps alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGroupBuilder, startTrajectoryAssembler } from '../../../processors/index.ts';
import type { ProcessorHandle } from '../../../streams/index.ts';
import type { Reward, Turn } from '../../../schemas/index.ts';
import { exampleReward, exampleTurn } from '../../support/fixtures.ts';
import { family, readAll, waitFor, type Family } from './support.ts';

const BATCH = 'itb-1';
const rollouts = [
  { task: 'up', index: 0, reward: 1, calls: 2 },
  { task: 'up', index: 1, reward: 0, calls: 1 },
  { task: 'cp', index: 0, reward: 1, calls: 1 },
  { task: 'cp', index: 1, reward: 1, calls: 1 },
];

function rollout(r: (typeof rollouts)[number], run: string): { turns: Turn[]; reward: Reward } {
  const sessionId = `${run}-${BATCH}-${r.task}-r${r.index}`;
  const group = `${BATCH}-${r.task}`;
  const turns = Array.from({ length: r.calls }, (_, k) =>
    exampleTurn({
      turnId: `${sessionId}-t${k}`,
      sessionId,
      userId: null,
      completedAt: 1_000 + k,
      metadata: { gym_task: r.task, gym_group: group, gym_rollout: String(r.index) },
    }),
  );
  const reward = exampleReward({
    rewardId: `${sessionId}-reward`,
    sessionId,
    userId: null,
    reward: r.reward,
    passed: r.reward === 1,
    turnIds: turns.map((t) => t.turnId),
    rollout: { suite: 'it', taskId: r.task, groupId: group, batchId: BATCH, index: r.index, groupSize: 2, batchGroups: 2, split: 'TRAIN' },
  });
  return { turns, reward };
}

describe('turns + rewards → trajectories → GRPO samples on Kafka', { timeout: 180_000 }, () => {
  let f: Family;
  const services: ProcessorHandle[] = [];
  before(async () => {
    f = await family('grpo');
    services.push(await startTrajectoryAssembler({ kafka: f.kafka, codecs: f.codecs, settleMs: 2000 }));
    services.push(await startGroupBuilder({ kafka: f.kafka, codecs: f.codecs, normalizeStd: false }));
    await Promise.all(services.map((s) => s.ready));
  });
  after(async () => {
    for (const s of services) await s.stop();
    await f?.close();
  });

  it('one sample per step of the group with signal, its advantage on every step; the all-equal group skipped', async () => {
    const made = rollouts.map((r) => rollout(r, f.prefix.replace(/\W/g, '')));
    // Rewards before some of their turns: the assembler waits for every listed turn.
    await f.producer.sendAll(made.map((m) => ({ id: 'rewards' as const, key: m.reward.sessionId, value: m.reward })));
    await f.producer.sendAll(made.flatMap((m) => m.turns.map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t }))));
    await waitFor('the batch’s samples', async () => (await readAll(f, 'samples')).length >= 3);
    const trajectories = await readAll(f, 'trajectories');
    assert.equal(trajectories.length, 4, 'one trajectory per rollout');
    assert.ok(trajectories.every((t) => t.missingTurns === 0));
    const samples = await readAll(f, 'samples');
    assert.equal(samples.length, 3, "the 'up' group's three steps; 'cp' (1, 1) carries no signal");
    const byTurn = new Map(samples.map((s) => [s.turnId, s]));
    const up0 = made[0].turns.map((t) => byTurn.get(t.turnId));
    assert.deepEqual(
      up0.map((s) => s?.reward),
      [0.5, 0.5],
      'every step of the passing rollout: 1 − 0.5',
    );
    assert.equal(byTurn.get(made[1].turns[0].turnId)?.reward, -0.5);
    for (const s of samples) {
      assert.equal(s.group?.batchId, BATCH);
      assert.equal(s.group?.batchSamples, 3);
      assert.equal(s.method, 'RL');
      assert.equal(s.judgeId, 'verifier:command');
    }
  });
});
