import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import type { TurnPair } from '../../../schemas/index.ts';
import { createKafka, Transactions, type EventCodecs } from '../../../streams/index.ts';
import { createLogger } from '../../../core/index.ts';
import { countByInput, moveMidTransaction, scaleGroup } from '../../../bench/chaos/partition-moves.ts';
import { inProcessMembers } from '../../support/group-members.ts';
import { produceTurns, startCountingProcessor } from '../../support/counting-processor.ts';
import { family, readAll } from '../../support/topic-family.ts';
import { ensureStack } from '../../support/stack.ts';
import { caughtUp } from '../../support/caught-up.ts';
import { waitFor } from '../../support/wait-for.ts';

let kafka: Kafka;
let stack: Awaited<ReturnType<typeof ensureStack>>;

const readPairs = (codecs: EventCodecs): Promise<TurnPair[]> => readAll({ kafka, codecs }, 'pairs');

/** Per session, the counts the counting processor emitted (its changelog state), sorted. */
function countsBySession(pairs: TurnPair[]): Map<string, number[]> {
  const by = new Map<string, number[]>();
  for (const p of pairs) by.set(p.sessionId, [...(by.get(p.sessionId) ?? []), p.turn.mainTurnIndex]);
  for (const v of by.values()) v.sort((a, b) => a - b);
  return by;
}

describe('partitions moving between the instances of a transactional processor (real Kafka)', { timeout: 600_000 }, () => {
  before(async () => {
    stack = await ensureStack();
    kafka = createKafka({ brokers: [stack.brokers], clientId: 'partition-move-test' });
  });

  it('a partition taken from an instance whose transaction is open: the new owner handles its records, the old owner cannot commit them too', async (t) => {
    const { codecs, producer, prefix } = await family('move-mid-txn', 1);
    const ids = await produceTurns(producer, 3, 10);
    const groupId = `${prefix}counting`;
    const members = inProcessMembers({
      brokers: stack.brokers,
      codecs,
      groupId,
      // The co-partitioned assignor gives the one partition to the member whose id sorts first: b.
      clientIdOf: (id) => (id === 'b' ? 'move-0-b' : 'move-1-a'),
    });
    await moveMidTransaction(members, {
      taken: () => caughtUp(kafka, groupId, [codecs.topic('turns')]),
      settled: async () =>
        void (await waitFor('b to be idle', async () => {
          const s = members.handles.get('b')?.stats();
          return s !== undefined && s.inFlight === 0;
        })),
    });
    const outcome = await members.heldOutcome('a');
    const pairs = await readPairs(codecs);
    const counts = countByInput(
      ids,
      pairs.map((p) => p.pairId),
    );
    t.diagnostic(
      `a's held commit: ${outcome instanceof Error ? outcome.message : String(outcome)}; ${counts.inputs} inputs, ${pairs.length} outputs: lost ${counts.lost}, doubled ${counts.doubled}`,
    );
    assert.deepEqual(counts, { inputs: 30, lost: 0, doubled: 0, extra: 0 });
    assert.ok(outcome instanceof Error, 'the old owner was fenced');
    // The state moved with the partition: each session counted 1..10 once.
    for (const [session, n] of countsBySession(pairs))
      assert.deepEqual(
        n,
        Array.from({ length: 10 }, (_, i) => i + 1),
        session,
      );
    await caughtUp(kafka, groupId, [codecs.topic('turns')]);
    await producer.disconnect();
  });

  it('an instance fenced on a partition it still holds (the group moved it away and back unseen) takes it over again from the committed offsets', async () => {
    const { codecs, producer, prefix } = await family('move-refenced', 1);
    const groupId = `${prefix}counting`;
    const ids = await produceTurns(producer, 2, 5);
    const h = await startCountingProcessor({ kafka, codecs, groupId });
    try {
      await h.ready;
      await caughtUp(kafka, groupId, [codecs.topic('turns')]);
      // What another owner does first when the partition comes to it: claim its transactional id.
      const other = new Transactions({ kafka, transactionalId: `${groupId}.partition-0`, logger: createLogger('other-owner', 'warn') });
      await other.connect();
      await other.claim();
      await other.disconnect();
      ids.push(...(await produceTurns(producer, 2, 5)));
      await caughtUp(kafka, groupId, [codecs.topic('turns')]);
      assert.ok(h.stats().fencedTransactions >= 1, 'its transaction was fenced');
      assert.equal(h.stats().producers, 1, 'a new producer holds the partition');
    } finally {
      await h.stop();
    }
    const pairs = await readPairs(codecs);
    assert.deepEqual(
      countByInput(
        ids,
        pairs.map((p) => p.pairId),
      ),
      { inputs: 20, lost: 0, doubled: 0, extra: 0 },
    );
    for (const [session, n] of countsBySession(pairs))
      assert.deepEqual(
        n,
        Array.from({ length: 10 }, (_, i) => i + 1),
        session,
      );
    await producer.disconnect();
  });

  it('a group scaled 1 → 3 → 1 under steady input: every input handled once, each session counted in order', async (t) => {
    const { codecs, producer, prefix } = await family('move-scale', 6);
    const groupId = `${prefix}counting`;
    const sessions = 24;
    const ids: string[] = [];
    let feeding = true;
    // Steady input: one turn per session every 200 ms, in order per session.
    const feed = (async () => {
      for (let round = 0; feeding; round++) {
        ids.push(...(await produceTurns(producer, sessions, 1, `r${round}-`)));
        await new Promise((r) => setTimeout(r, 200)); // deliberate: the input's pace
      }
    })();
    const members = inProcessMembers({ brokers: stack.brokers, codecs, groupId });
    const settled = () => caughtUp(kafka, groupId, [codecs.topic('turns')], { timeoutMs: 180_000 });
    let running: string[] = [];
    try {
      const r = await scaleGroup(members, { settled, taken: settled }, [1, 3, 1], (l) => t.diagnostic(l));
      running = r.running;
    } finally {
      feeding = false;
      await feed;
    }
    await settled();
    for (const id of running) await members.stop(id);
    const pairs = await readPairs(codecs);
    const counts = countByInput(
      ids,
      pairs.map((p) => p.pairId),
    );
    t.diagnostic(`${counts.inputs} inputs, ${pairs.length} outputs: lost ${counts.lost}, doubled ${counts.doubled}`);
    assert.deepEqual(counts, { inputs: ids.length, lost: 0, doubled: 0, extra: 0 });
    const rounds = ids.length / sessions;
    for (const [session, n] of countsBySession(pairs))
      assert.deepEqual(
        n,
        Array.from({ length: rounds }, (_, i) => i + 1),
        session,
      );
    await producer.disconnect();
  });
});
