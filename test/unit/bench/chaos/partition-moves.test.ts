/** The partition-move scenarios' logic (bench/chaos/partition-moves.ts), on a recording group: what is started, held and stopped, in which order, and the counts by input id. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countByInput, moveMidTransaction, scaleGroup, type GroupMembers } from '../../../../bench/chaos/partition-moves.ts';

function recording(): { members: GroupMembers; log: string[] } {
  const log: string[] = [];
  const step = (what: string) => async (id: string) => void log.push(`${what} ${id}`);
  return { members: { start: step('start'), stop: step('stop'), stall: step('stall'), resume: step('resume') }, log };
}

test('countByInput: lost, doubled and extra outputs, each counted by input id', () => {
  assert.deepEqual(countByInput(['a', 'b', 'c'], ['a', 'b', 'b', 'b', 'x']), { inputs: 3, lost: 1, doubled: 2, extra: 1 });
  assert.deepEqual(countByInput(['a', 'b'], ['b', 'a']), { inputs: 2, lost: 0, doubled: 0, extra: 0 });
});

test('scaleGroup: 1 → 3 → 1 starts i0, then i1 and i2, stops the newest first, waits after each step, leaves the last step running', async () => {
  const { members, log } = recording();
  const r = await scaleGroup(members, { settled: async () => void log.push('settled'), taken: async () => undefined }, [1, 3, 1]);
  assert.deepEqual(log, ['start i0', 'settled', 'start i1', 'start i2', 'settled', 'stop i2', 'stop i1', 'settled']);
  assert.deepEqual(r.running, ['i0']);
  assert.deepEqual(
    r.steps.map((s) => s.instances),
    [1, 3, 1],
  );
});

test('scaleGroup from three running instances: 3 → 1 → 3 stops i2 and i1, then starts them again (chaos --cluster)', async () => {
  const { members, log } = recording();
  const settled = async () => void log.push('settled');
  const r = await scaleGroup(members, { settled, taken: async () => undefined }, [1, 3], () => undefined, ['i0', 'i1', 'i2']);
  assert.deepEqual(log, ['stop i2', 'stop i1', 'settled', 'start i1', 'start i2', 'settled']);
  assert.deepEqual(r.running, ['i0', 'i1', 'i2']);
});

test('moveMidTransaction: a is held before b joins, and let go only once b has taken its partitions', async () => {
  const { members, log } = recording();
  await moveMidTransaction(members, { settled: async () => void log.push('settled'), taken: async () => void log.push('taken') });
  assert.deepEqual(log, ['start a', 'stall a', 'start b', 'taken', 'resume a', 'settled', 'stop b', 'stop a']);
});
