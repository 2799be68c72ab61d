import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import avro from 'avsc';
import { funnel, rewardByVersion, judgeStats, dlqByReason, userStats, latencyPercentiles } from '../../../analytics/index.ts';
import { AnalyticsStore } from '../../../warehouse/index.ts';
import { learningDataset } from '../../../bench/sink-dataset.ts';
import { loadConfig } from '../../../cli/config.ts';
import { clickhouseVersion, stackPids, stackUp } from '../../../infra/index.ts';
import { createKafka } from '../../../streams/index.ts';
import { createRegistryClient, TOPICS, topicName, valueSubject } from '../../../schemas/index.ts';
import { caughtUp } from '../../support/caught-up.ts';
import { exampleTurn } from '../../support/fixtures.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { assertFunnelCounts, dropTables, family, startSinkOn, tableCounts, topicCounts, waitFor, type Family } from './support.ts';

const SINK_IDS = ['turns', 'feedback', 'pairs', 'judgements', 'samples', 'weights', 'dlq'] as const;

let kafka: Kafka;
let stack: Awaited<ReturnType<typeof ensureStack>>;
const stores: AnalyticsStore[] = [];

function stackOptions(): Parameters<typeof stackUp>[0] {
  const c = loadConfig(process.env, REPO_ROOT);
  return { home: c.home, kafkaBrokers: c.kafkaBrokers, schemaRegistryUrl: c.schemaRegistryUrl, clickhouseUrl: c.clickhouseUrl };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A sink for the outage tests: group `<prefix>sink`, batches of `batchRows`, flushed every 100 ms, retried within a second. */
const outageSink = (f: Family, prefix: string, batchRows: number) =>
  startSinkOn(kafka, f, { groupId: `${prefix}sink`, batchRows, flushIntervalMs: 100, retryMaxMs: 1000 });

/** Stops a service of the local stack (its whole process group, as infra started it). */
async function stopStackService(name: 'clickhouse' | 'registry'): Promise<void> {
  const pid = stackPids(stackOptions())[name];
  assert.ok(pid, `this test stops the ${name} of the local stack (run without its URL in the environment)`);
  process.kill(-pid, 'SIGTERM');
  await waitFor(`the ${name} to stop`, async () => !alive(pid), 60000, 100);
}

/** Starts it again through infra (which reuses Kafka and the registry); a no-op when it runs. */
async function restartClickhouse(): Promise<void> {
  if ((await clickhouseVersion(stack.clickhouseUrl)) !== undefined) return;
  await stackUp(stackOptions());
}

describe('clickhouse sink (real Kafka, registry and ClickHouse)', { timeout: 300000 }, () => {
  before(async () => {
    stack = await ensureStack();
    kafka = createKafka({ brokers: [stack.brokers], clientId: 'clickhouse-sink-test' });
  });
  after(async () => {
    // Whatever happened, the shared stack is left running and healthy.
    await restartClickhouse();
    for (const s of stores) {
      await dropTables(s);
      await s.close();
    }
  });

  it('stores every event once: row counts equal topic counts, also after the group re-reads everything', async () => {
    const prefix = uniquePrefix('ch-sink');
    const f: Family = await family(kafka, stack.registryUrl, stack.clickhouseUrl, prefix);
    const data = learningDataset({ users: 3, sessionsPerUser: 3, turnsPerSession: 8, versions: 3, idPrefix: prefix });
    for (let i = 0; i < data.events.length; i += 200) await f.producer.sendAll(data.events.slice(i, i + 200));
    // Garbage a peer could write: not Avro. The sink dead-letters it and stores the dead letter.
    const raw = kafka.producer();
    await raw.connect();
    await raw.send({
      topic: f.codecs.topic('turns'),
      messages: [
        { key: 'x', value: Buffer.from('{"not":"avro"}') },
        { key: 'y', value: Buffer.from([0, 0x7f, 0xff, 0xff, 0xff, 1]) },
      ],
    });
    await raw.disconnect();

    const groupId = `${prefix}sink`;
    const store = new AnalyticsStore(f.analytics);
    stores.push(store);
    let sink = startSinkOn(kafka, f, {
      groupId,
      batchRows: 100,
      flushIntervalMs: 200,
    });
    await sink.ready;
    const expectRows = async (): Promise<Record<string, number>> => {
      const topics = await topicCounts(kafka, f.codecs, SINK_IDS);
      return Object.fromEntries(SINK_IDS.map((id) => [id, topics[id].valid]));
    };
    let expected: Record<string, number> = {};
    await waitFor('rows = topic counts', async () => {
      expected = await expectRows();
      if (expected.dlq < 2) return false; // the two garbage records reach the DLQ topic first
      const rows = await tableCounts(store);
      return SINK_IDS.every((id) => rows[id].final === expected[id]);
    });
    const first = sink.stats();
    await sink.stop();
    assert.equal(expected.turns, data.counts.turns);
    assert.equal(expected.dlq, 2, 'both garbage records dead-lettered by the sink');
    assert.equal(first.deadLettered, 2);
    assert.ok(first.batches > 0 && first.rowsInserted >= data.events.length);
    const dlq = await dlqByReason(store);
    assert.deepEqual(
      dlq.map((d) => [d.stage, d.code, d.count]),
      [['clickhouse-sink', 'TS_ERR_DECODE', 2]],
    );

    // Forced re-delivery: the group's committed offsets are deleted, so a second sink in the
    // same group reads every topic from the beginning again. Background merges are held, so the
    // raw row counts show every duplicate that FINAL collapses.
    for (const id of SINK_IDS) await store.command(`SYSTEM STOP MERGES ${store.tables[id]}`);
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([groupId]);
    await admin.disconnect();
    sink = startSinkOn(kafka, f, { groupId, batchRows: 100, flushIntervalMs: 200 });
    await sink.ready;
    const total = Object.values(expected).reduce((a, b) => a + b, 0) + 2;
    await waitFor(
      'the second sink re-read everything',
      async () => sink.stats().consumed >= total && sink.stats().buffered === 0 && sink.stats().rowsInserted > 0,
    );
    await caughtUp(
      kafka,
      groupId,
      SINK_IDS.map((id) => f.codecs.topic(id)),
    );
    const second = sink.stats();
    await sink.stop();
    const rows = await tableCounts(store);
    const after = await expectRows();
    for (const id of SINK_IDS) {
      if (id === 'dlq') continue;
      assert.equal(rows[id].final, after[id], `${id}: one row per event`);
      assert.ok(rows[id].raw >= 2 * after[id], `${id}: the events really were stored twice (${rows[id].raw} raw rows)`);
    }
    // The garbage was dead-lettered again (a second DLQ record each) but is still one row each.
    assert.equal(after.dlq, 4);
    assert.equal(rows.dlq.final, 2);
    assert.ok(second.rowsInserted >= data.events.length);

    // The queries read the collapsed rows.
    const fu = await assertFunnelCounts(store, data.counts);
    assert.ok(fu.trained > 0 && fu.trained < fu.samples, `trained ${fu.trained} of ${fu.samples}`);
    const rv = await rewardByVersion(store);
    assert.deepEqual(
      rv.map((v) => v.policy_version),
      [0, 1, 2],
    );
    assert.equal(
      rv.reduce((s, v) => s + v.judged, 0),
      data.counts.judged,
    );
    const judges = await judgeStats(store);
    assert.equal(judges.length, 1);
    assert.ok(judges[0].agreement! > 0.5 && judges[0].agreement! <= 1);
    assert.ok(judges[0].failure_rate! > 0 && judges[0].failure_rate! < 0.5);
    const users = await userStats(store);
    assert.equal(users.length, 3);
    assert.equal(
      users.reduce((s, u) => s + u.turns, 0),
      data.counts.turns,
    );
    const lat = await latencyPercentiles(store);
    const all = lat.find((l) => l.turn_type === 'ALL')!;
    assert.ok(all.turns === data.counts.turns && all.p50! > 0 && all.p50! <= all.p90! && all.p90! <= all.p99!);
    await f.producer.disconnect();
  });

  it('loses nothing when ClickHouse is stopped and restarted while the sink runs', async () => {
    const prefix = uniquePrefix('ch-sink-outage');
    const f = await family(kafka, stack.registryUrl, stack.clickhouseUrl, prefix);
    const data = learningDataset({ users: 3, sessionsPerUser: 2, turnsPerSession: 9, versions: 3, idPrefix: prefix });
    const third = Math.floor(data.events.length / 3);
    const store = new AnalyticsStore(f.analytics);
    stores.push(store);
    const sink = outageSink(f, prefix, 50);
    try {
      await sink.ready;
      await f.producer.sendAll(data.events.slice(0, third));
      await waitFor('the first third stored', async () => sink.stats().rowsInserted >= third);
      try {
        await stopStackService('clickhouse');
        await f.producer.sendAll(data.events.slice(third, 2 * third));
        await waitFor(
          'inserts failing and fetching paused',
          async () => sink.stats().insertFailures >= 2 && sink.stats().paused,
          30000,
          100,
        );
        await f.producer.sendAll(data.events.slice(2 * third));
        const failures = sink.stats().insertFailures;
        await waitFor('the outage to go on: two more failed retries', async () => sink.stats().insertFailures >= failures + 2, 30000, 100);
      } finally {
        await restartClickhouse();
      }
      const expected = (await topicCounts(kafka, f.codecs, SINK_IDS)) as Record<string, { valid: number }>;
      await waitFor(
        'every event stored after the restart',
        async () => {
          const rows = await tableCounts(store);
          return SINK_IDS.every((id) => rows[id].final === expected[id].valid);
        },
        120000,
      );
      const s = sink.stats();
      assert.ok(s.insertFailures >= 2, `inserts failed while ClickHouse was down (${s.insertFailures})`);
      assert.equal(s.paused, false, 'fetching resumed');
      assert.equal(expected.turns.valid, data.counts.turns);
      const fu = await funnel(store);
      assert.equal(fu.turns, data.counts.turns);
      assert.equal(fu.samples, data.counts.samples);
    } finally {
      await sink.stop();
      await f.producer.disconnect();
    }
  });

  it('loses nothing and dead-letters nothing when the registry is down as records of a writer schema it has not seen arrive', async () => {
    const prefix = uniquePrefix('ch-sink-registry');
    // An older version of Turn (without two fields the current one adds with defaults), registered
    // first: records written with it need a registry lookup before the sink can read them.
    const old = JSON.parse(JSON.stringify(TOPICS.turns.schema())) as { fields: Array<{ name: string }> };
    old.fields = old.fields.filter((x) => x.name !== 'promptTruncatedTokens' && x.name !== 'sessionDone');
    const client = createRegistryClient({ url: stack.registryUrl });
    const oldId = await client.register(
      valueSubject(topicName('turns', { prefix })),
      { schemaType: 'AVRO', schema: JSON.stringify(old) },
      false,
    );
    const f = await family(kafka, stack.registryUrl, stack.clickhouseUrl, prefix);
    const store = new AnalyticsStore(f.analytics);
    stores.push(store);
    const turn = (i: number) => exampleTurn({ turnId: `${prefix}-t${i}`, sessionId: `${prefix}-s${i % 5}` });
    const header = Buffer.alloc(5);
    header.writeInt32BE(oldId, 1);
    const oldType = avro.Type.forSchema(old as avro.Schema);
    const raw = kafka.producer();
    await raw.connect();
    const sink = outageSink(f, prefix, 20);
    try {
      await sink.ready;
      await f.producer.sendAll(Array.from({ length: 20 }, (_, i) => ({ id: 'turns' as const, key: turn(i).sessionId, value: turn(i) })));
      await waitFor('the turns of the current writer stored', async () => (await tableCounts(store)).turns.final === 20);
      try {
        await stopStackService('registry');
        const messages = Array.from({ length: 30 }, (_, k) => {
          const { promptTruncatedTokens: _a, sessionDone: _b, ...v1 } = turn(20 + k);
          return { key: v1.sessionId, value: Buffer.concat([header, oldType.toBuffer(v1)]) };
        });
        await raw.send({ topic: f.codecs.topic('turns'), messages });
        await new Promise((r) => setTimeout(r, 4000)); // absence window: lookups failing meanwhile, nothing stored or dead-lettered, no crash
        assert.equal(sink.stats().deadLettered, 0, 'not the fault of the records: nothing dead-lettered');
        assert.equal((await tableCounts(store)).turns.final, 20, 'the turns of the old writer wait for the registry');
      } finally {
        await stackUp(stackOptions()); // starts what of the stack is down: the registry
      }
      await waitFor('every turn stored after the registry came back', async () => (await tableCounts(store)).turns.final === 50, 120000);
      assert.equal(sink.stats().deadLettered, 0);
      const counts = await topicCounts(kafka, f.codecs, ['dlq']);
      assert.equal(counts.dlq.valid, 0, 'no dead letter on the topic');
    } finally {
      await sink.stop();
      await raw.disconnect();
      await f.producer.disconnect();
    }
  });
});
