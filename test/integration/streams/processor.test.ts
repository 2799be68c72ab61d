import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EachBatchPayload, Kafka } from 'kafkajs';
import type { DeadLetter, Feedback, SessionState, Turn, TurnPair } from '../../../schemas/index.ts';
import {
  createEventCodecs,
  createKafka,
  ensureTopics,
  EventProducer,
  readToEnd,
  runProcessor,
  type EventCodecs,
  type ProcessorHandle,
} from '../../../streams/index.ts';
import { CoPartitionedAssigner } from '../../../streams/co-partitioned-assigner.ts';
import { aroundCommits } from '../../support/around-commits.ts';
import { produceTurns, startCountingProcessor } from '../../support/counting-processor.ts';
import { exampleFeedback, examplePair, exampleSessionState, exampleTurn } from '../../support/fixtures.ts';
import { family, readAll } from '../../support/topic-family.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { caughtUp } from '../../support/caught-up.ts';
import { waitFor } from '../../support/wait-for.ts';

let kafka: Kafka;
let stack: Awaited<ReturnType<typeof ensureStack>>;

const readPairs = (codecs: EventCodecs): Promise<TurnPair[]> => readAll({ kafka, codecs }, 'pairs');

/** The pairs on the output topic, checked: `count` of them, one pair id for each of `ids` and no other. */
async function pairsOf(codecs: EventCodecs, count: number, ids: string[]): Promise<TurnPair[]> {
  const pairs = await readPairs(codecs);
  assert.equal(pairs.length, count);
  assert.deepEqual(new Set(pairs.map((p) => p.pairId)), new Set(ids));
  return pairs;
}

/** Sessions s0.. each counted 1..n exactly once by the counting processor (state and outputs committed together). */
function assertCountedOnce(pairs: TurnPair[], sessions: number, n: number): void {
  for (let s = 0; s < sessions; s++) {
    const idx = pairs
      .filter((p) => p.sessionId === `s${s}`)
      .map((p) => p.turn.mainTurnIndex)
      .sort((a, b) => a - b);
    assert.deepEqual(
      idx,
      Array.from({ length: n }, (_, i) => i + 1),
      `session s${s}`,
    );
  }
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('transactional processor runtime (real Kafka)', { timeout: 300000 }, () => {
  before(async () => {
    stack = await ensureStack();
    kafka = createKafka({ brokers: [stack.brokers], clientId: 'processor-test' });
  });

  it('emits exactly one output per record, dead-letters garbage with a reason, and restores state after a restart', async () => {
    const { codecs, producer, prefix } = await family('rt-exactly-once', 4);
    const ids = await produceTurns(producer, 10, 20);
    // Garbage a peer could send: not Avro at all, and a tombstone.
    const raw = kafka.producer();
    await raw.connect();
    await raw.send({
      topic: codecs.topic('turns'),
      messages: [
        { key: 's1', value: Buffer.from('{"not":"avro"}') },
        { key: 's2', value: null },
      ],
    });
    await raw.disconnect();

    let h = await startCountingProcessor({ kafka, codecs, groupId: `${prefix}counting` });
    await h.ready;
    await waitFor('200 pairs', async () => h.stats().produced >= 200 + 2 + 200, { timeoutMs: 90_000, intervalMs: 500 });
    await h.stop();

    let pairs = await pairsOf(codecs, 200, ids);
    const dlq: DeadLetter[] = [];
    await readToEnd(kafka, codecs.topic('dlq'), async (r) => void dlq.push(await codecs.of('dlq').decode(r.value!)));
    assert.equal(dlq.length, 2);
    assert.deepEqual(dlq.map((d) => d.code).sort(), ['TS_ERR_DECODE', 'TS_ERR_DECODE']);
    assert.ok(
      dlq.some((d) => d.value?.toString() === '{"not":"avro"}'),
      'the raw bytes are kept',
    );
    assert.ok(dlq.every((d) => d.stage === 'counting' && d.message.length > 0));

    // Restart: state comes back from the changelog, so counts continue where they stopped.
    const more = await produceTurns(producer, 10, 5);
    h = await startCountingProcessor({ kafka, codecs, groupId: `${prefix}counting` });
    await h.ready;
    await waitFor('50 more pairs', async () => h.stats().consumed >= 50 && h.stats().inFlight === 0 && h.stats().produced >= 100, {
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    await h.stop();
    pairs = await readPairs(codecs);
    assert.equal(pairs.length, 250);
    const latest = pairs.filter((p) => more.includes(p.pairId));
    assert.equal(Math.max(...latest.map((p) => p.turn.mainTurnIndex)), 25, 'each session counted 20 + 5 turns');
    await producer.disconnect();
  });

  it('a backlog commits in transactions of at most maxTransactionRecords, every output once', async () => {
    const { codecs, producer, prefix } = await family('rt-bounded', 4);
    const ids = await produceTurns(producer, 100, 20);
    const h = await runProcessor({
      name: 'bounded',
      kafka,
      codecs,
      groupId: `${prefix}bounded`,
      inputs: ['turns'],
      maxTransactionRecords: 100,
      // A long wait lets far more than 100 records finish between two commits.
      commitIntervalMs: 300,
      async handle(record, ctx) {
        const turn = record.value as { turnId: string };
        ctx.emit('pairs', record.key, examplePair({ pairId: turn.turnId }));
      },
    });
    await h.ready;
    await waitFor('2000 outputs', async () => h.stats().produced >= 2000, { timeoutMs: 90_000, intervalMs: 500 });
    const stats = h.stats();
    await h.stop();
    assert.ok(stats.largestTransaction <= 100, `largest transaction ${stats.largestTransaction} records`);
    assert.ok(stats.committedTransactions >= 20, `${stats.committedTransactions} transactions`);
    await pairsOf(codecs, 2000, ids);
    await producer.disconnect();
  });

  for (const mode of ['handle', 'handleBatch'] as const)
    it(`kill -9 in the middle of a stream, then restart: every output exactly once (${mode})`, async () => {
      const { codecs, producer, prefix } = await family(`rt-kill9-${mode}`, 4);
      // Half now and half once some pairs are committed, so that a batch handler is killed with
      // some batches committed and more in flight.
      const ids = await produceTurns(producer, 8, 25);
      const args = [stack.brokers, stack.registryUrl, prefix, '40', '0', mode === 'handleBatch' ? 'batch' : 'record'];
      const child = () =>
        spawn(process.execPath, ['--import', 'tsx', 'test/support/counting-processor.ts', ...args], {
          cwd: REPO_ROOT,
          stdio: ['ignore', 'pipe', 'inherit'],
        });
      const first = child();
      await waitFor('some committed pairs', async () => (await readPairs(codecs)).length >= 60, { timeoutMs: 120000, intervalMs: 500 });
      ids.push(...(await produceTurns(producer, 8, 25)));
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      const before = (await readPairs(codecs)).length;
      assert.ok(before < 400, `killed mid-stream (had ${before})`);

      const second = child();
      await waitFor('all 400 pairs', async () => (await readPairs(codecs)).length >= 400, { timeoutMs: 180000, intervalMs: 500 });
      await caughtUp(kafka, `${prefix}counting`, [codecs.topic('turns')]);
      second.kill('SIGTERM');
      await new Promise((r) => second.once('exit', r));
      const pairs = await pairsOf(codecs, 400, ids);
      assert.equal(new Set(pairs.map((p) => p.pairId)).size, 400);
      // Per session the counter ran 1..50 once each: state and outputs committed together.
      assertCountedOnce(pairs, 8, 50);
      await producer.disconnect();
    });

  it('handleBatch: each fetched batch in one call, every output once, state counted in order; a record refused for good is dead-lettered alone', async () => {
    const { codecs, producer, prefix } = await family('rt-batch', 4);
    const ids = await produceTurns(producer, 10, 30);
    // One turn of session s3 is refused by the handler (non-retriable): its batch is split.
    await producer.sendAll([{ id: 'turns', key: 's3', value: exampleTurn({ turnId: 'poison-1', sessionId: 's3' }) }]);
    const more = await produceTurns(producer, 10, 2);
    const sizes: number[] = [];
    const h = await startCountingProcessor({
      kafka,
      codecs,
      groupId: `${prefix}counting`,
      batch: true,
      onBatch: (n) => void sizes.push(n),
    });
    await h.ready;
    await waitFor(
      '320 pairs and a dead letter',
      async () => h.stats().consumed >= 321 && h.stats().inFlight === 0 && h.stats().deadLettered >= 1,
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await h.stop();
    assert.ok(Math.max(...sizes) > 1, `batches of ${Math.max(...sizes)} records at most`);
    const pairs = await pairsOf(codecs, 320, [...ids, ...more]);
    // In order per session, the refused turn not counted: 1..32 each.
    assertCountedOnce(pairs, 10, 32);
    const dlq: DeadLetter[] = [];
    await readToEnd(kafka, codecs.topic('dlq'), async (r) => void dlq.push(await codecs.of('dlq').decode(r.value!)));
    assert.equal(dlq.length, 1);
    assert.equal(dlq[0].code, 'TS_ERR_INVALID_INPUT');
    assert.match(dlq[0].message, /refused poison-1/);
    await producer.disconnect();
  });

  it('handleBatch: a fetched batch in flight does not pause its partitions (the batch default bound is 4096 records, not 64)', async () => {
    const { codecs, producer, prefix } = await family('rt-batch-bound', 4);
    await produceTurns(producer, 10, 60);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const h = await runProcessor({
      name: 'held-batches',
      kafka,
      codecs,
      groupId: `${prefix}held`,
      inputs: ['turns'],
      async handleBatch() {
        await gate;
      },
    });
    try {
      await h.ready;
      // At 64, one such batch paused every partition, and kafkajs then sleeps its whole fetch wait.
      await waitFor('more than 64 records in flight', async () => h.stats().inFlight > 64, { timeoutMs: 90_000, intervalMs: 500 });
      assert.equal(h.stats().pausedPartitions, 0);
      release();
      await waitFor('all 600 handled', async () => h.stats().consumed >= 600 && h.stats().inFlight === 0, {
        timeoutMs: 90_000,
        intervalMs: 500,
      });
    } finally {
      release();
      await h.stop();
      await producer.disconnect();
    }
  });

  it('handleBatch with state over two co-partitioned topics: the batches of a partition run one after the other', async () => {
    const { codecs, producer, prefix } = await family('rt-batch-2topics', 4);
    const events = [];
    const ids: string[] = [];
    for (let i = 0; i < 15; i++) {
      for (let s = 0; s < 8; s++) {
        const turnId = randomUUID();
        const feedbackId = randomUUID();
        ids.push(turnId, feedbackId);
        events.push({ id: 'turns' as const, key: `s${s}`, value: exampleTurn({ turnId, sessionId: `s${s}` }) });
        events.push({ id: 'feedback' as const, key: `s${s}`, value: exampleFeedback({ feedbackId, sessionId: `s${s}`, turnId: null }) });
      }
    }
    for (let i = 0; i < events.length; i += 40) await producer.sendAll(events.slice(i, i + 40));
    const h = await runProcessor<SessionState>({
      name: 'counting-2topics',
      kafka,
      codecs,
      groupId: `${prefix}counting`,
      inputs: ['turns', 'feedback'],
      state: { topic: 'sessionState' },
      concurrency: 64,
      logger: undefined,
      // Reads the counts, waits, then writes them back: two batches of a partition at once would
      // both count on from the same state, and a session's counts would repeat.
      async handleBatch(records, ctx) {
        const counts = new Map<string, number>();
        for (const r of records) counts.set(r.key, counts.get(r.key) ?? ctx.state.get(r.key)?.mainTurnCount ?? 0);
        await sleep(25); // deliberate: a slow batch, so that two of one partition would overlap
        for (const r of records) {
          const n = counts.get(r.key)! + 1;
          counts.set(r.key, n);
          const id = r.topicId === 'turns' ? (r.value as Turn).turnId : (r.value as Feedback).feedbackId;
          const pair = examplePair({ pairId: id, sessionId: r.key });
          ctx.emit('pairs', r.key, { ...pair, turn: { ...pair.turn, turnId: id, mainTurnIndex: n } });
        }
        for (const [key, n] of counts)
          ctx.state.put(key, exampleSessionState({ sessionId: key, mainTurnCount: n, pending: null, recentIds: [] }));
      },
    });
    await h.ready;
    await waitFor('240 pairs', async () => h.stats().consumed >= 240 && h.stats().inFlight === 0, { timeoutMs: 90_000, intervalMs: 500 });
    await h.stop();
    const pairs = await pairsOf(codecs, 240, ids);
    assertCountedOnce(pairs, 8, 30);
    await producer.disconnect();
  });

  it('an output larger than its topic allows sends its input to the DLQ; the stage never stalls on it', async () => {
    const { codecs, producer, prefix } = await family('rt-too-large', 4);
    const ids = await produceTurns(producer, 5, 2);
    const huge = ids[3];
    const h = await runProcessor({
      name: 'too-large',
      kafka,
      codecs,
      groupId: `${prefix}too-large`,
      inputs: ['turns'],
      async handle(record, ctx) {
        const turn = record.value as { turnId: string; sessionId: string };
        const pair = examplePair({ pairId: turn.turnId, sessionId: turn.sessionId });
        // One record's output would be 5 MiB: more than the pairs topic's 4 MiB.
        const content = turn.turnId === huge ? 'x'.repeat(5 * 1024 * 1024) : 'ok';
        ctx.emit('pairs', record.key, { ...pair, nextState: [{ role: 'USER', content, toolCallId: null }] });
      },
    });
    await h.ready;
    await waitFor(
      'every record handled and committed',
      async () => h.stats().consumed >= 10 && h.stats().inFlight === 0 && h.stats().produced >= 10,
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await h.stop();
    const pairs = await readPairs(codecs);
    assert.deepEqual(new Set(pairs.map((p) => p.pairId)), new Set(ids.filter((i) => i !== huge)));
    const dlq: DeadLetter[] = [];
    await readToEnd(kafka, codecs.topic('dlq'), async (r) => void dlq.push(await codecs.of('dlq').decode(r.value!)));
    assert.equal(dlq.length, 1);
    assert.equal(dlq[0].code, 'TS_ERR_TOO_LARGE');
    assert.match(dlq[0].message, /pairs/);
    const input = await codecs.of('turns').decode(dlq[0].value!);
    assert.equal(input.turnId, huge, 'the input record itself is kept');
    await producer.disconnect();
  });

  it('a rejoin that fetches again from offsets a running transaction is about to move past processes nothing twice', async () => {
    // The interleaving a loaded broker produces (every member's session expires at once): the
    // group's committed offsets are fetched after a rejoin while the transaction that moves them
    // is still running, and the records fetched again arrive once it has committed. Held here
    // in that order: the first commit waits until the records come again; they wait for it.
    const prefix = uniquePrefix('rt-rejoin');
    await ensureTopics(kafka, { naming: { prefix }, partitions: 1 });
    const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
    const producer = new EventProducer(kafka, codecs);
    await producer.connect();
    const ids = await produceTurns(producer, 3, 1);
    const groupId = `${prefix}rejoin`;
    const commitHeld = deferred<void>();
    const fetchedAgain = deferred<void>();
    const committed = deferred<void>();
    const handedAgain = deferred<void>();
    let highest = -1n;
    let held = false;
    const started: { h?: ProcessorHandle } = {};
    const hooked = new Proxy(kafka, {
      get(target, prop, receiver) {
        if (prop === 'consumer')
          return (config: Parameters<Kafka['consumer']>[0]) => {
            const c = target.consumer(config);
            const run = c.run.bind(c);
            c.run = (o) => {
              const eachBatch = o!.eachBatch!;
              return run({
                ...o,
                eachBatch: async (p: EachBatchPayload) => {
                  const offsets = p.batch.messages.map((m) => BigInt(m.offset));
                  const again = offsets.length > 0 && offsets[0] <= highest;
                  if (again) {
                    fetchedAgain.resolve();
                    await committed.promise;
                    await waitFor('the held transaction to be done', async () => (started.h?.stats().committedTransactions ?? 0) >= 1, {
                      timeoutMs: 90_000,
                      intervalMs: 500,
                    });
                  }
                  for (const x of offsets) if (x > highest) highest = x;
                  await eachBatch(p);
                  if (again) handedAgain.resolve();
                },
              });
            };
            return c;
          };
        if (prop === 'producer')
          return (config: Parameters<Kafka['producer']>[0]) =>
            aroundCommits(target.producer(config), async (commit) => {
              if (!held) {
                held = true;
                commitHeld.resolve();
                await fetchedAgain.promise;
                await commit();
                committed.resolve();
                return;
              }
              await commit();
            });
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const h = (started.h = await runProcessor({
      name: 'rejoin',
      kafka: hooked,
      codecs,
      groupId,
      inputs: ['turns'],
      sessionTimeoutMs: 6000,
      handle: async (record, ctx) => {
        const turn = record.value as Turn;
        ctx.emit('pairs', record.key, examplePair({ pairId: turn.turnId, sessionId: turn.sessionId }));
      },
    }));
    await commitHeld.promise;
    // A second member joins (its id sorts after ours: the one partition stays ours), so the
    // processor rejoins and kafkajs fetches the group's offsets while our commit is held.
    const other = createKafka({ brokers: [stack.brokers], clientId: 'zzz-rejoin' }).consumer({
      groupId,
      sessionTimeout: 6000,
      partitionAssigners: [CoPartitionedAssigner],
    });
    await other.connect();
    await other.subscribe({ topic: codecs.topic('turns'), fromBeginning: true });
    await other.run({ eachMessage: async () => undefined });
    await handedAgain.promise;
    // Whatever was handed over is committed (a duplicate too) once everything consumed is produced.
    await waitFor('what was handed over to commit', async () => h.stats().inFlight === 0 && h.stats().produced === h.stats().consumed, {
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    await other.disconnect();
    await h.stop();
    const pairs = await readPairs(codecs);
    assert.deepEqual(pairs.map((p) => p.pairId).sort(), [...ids].sort(), 'each record once');
    await producer.disconnect();
  });

  it('handlers slower than the session timeout cause no rebalance and no duplicate', async () => {
    const { codecs, producer, prefix } = await family('rt-slow', 4);
    await produceTurns(producer, 6, 1);
    const h = await startCountingProcessor({
      kafka,
      codecs,
      groupId: `${prefix}counting`,
      delayMs: 8000,
      sessionTimeoutMs: 6000,
      concurrency: 2,
    });
    await h.ready;
    await waitFor('6 slow records', async () => h.stats().produced >= 12, { timeoutMs: 90000, intervalMs: 500 });
    const stats = h.stats();
    await h.stop();
    assert.equal(stats.rebalances, 1, 'only the initial join');
    assert.equal((await readPairs(codecs)).length, 6);
    await producer.disconnect();
  });
});
