import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import { buildReport, compareRuns, dlqByReason, funnel, judgeStats, rewardByVersion } from '../../../analytics/index.ts';
import { AnalyticsStore, migrate, MIGRATIONS, type AnalyticsOptions } from '../../../warehouse/index.ts';
import { learningDataset } from '../../../bench/sink-dataset.ts';
import type { ClickhouseSinkHandle } from '../../../processors/clickhouse-sink/index.ts';
import type { Judgement } from '../../../schemas/index.ts';
import { createKafka, ensureTopics, EventProducer, type EventCodecs, type OutgoingEvent } from '../../../streams/index.ts';
import { caughtUp } from '../../support/caught-up.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';
import { assertFunnelCounts, dropTables, family, startSinkOn, tableCounts, topicCounts, waitFor } from './support.ts';

const DERIVED = ['pairs', 'judgements', 'samples'] as const;

let kafka: Kafka;
let stack: Awaited<ReturnType<typeof ensureStack>>;
const stores: AnalyticsStore[] = [];
const producers: EventProducer[] = [];

/** Rows per replay tag of a table, collapsed and physically stored. */
async function rowsByTag(store: AnalyticsStore, table: (typeof DERIVED)[number]): Promise<Record<string, { final: number; raw: number }>> {
  const t = store.tables[table];
  const out: Record<string, { final: number; raw: number }> = {};
  for (const r of await store.rows<{ tag: string; n: number }>(`SELECT replay_tag AS tag, count() AS n FROM ${t} FINAL GROUP BY tag`))
    out[r.tag] = { final: Number(r.n), raw: 0 };
  for (const r of await store.rows<{ tag: string; n: number }>(`SELECT replay_tag AS tag, count() AS n FROM ${t} GROUP BY tag`))
    (out[r.tag] ??= { final: 0, raw: 0 }).raw = Number(r.n);
  return out;
}

/** A replay's output: the live derived events again, with the tag, under the tagged topics. */
async function replayFamily(live: EventCodecs, prefix: string, tag: string): Promise<EventProducer> {
  // createTopics' wait for leaders now and then reads "does not host this topic-partition"
  // (a metadata race in kafkajs); creating is idempotent, so try again.
  await waitFor(
    'the tagged topics',
    async () => {
      await ensureTopics(kafka, { naming: { prefix, tag }, partitions: 2 });
      return true;
    },
    30_000,
    500,
  );
  const producer = new EventProducer(kafka, await live.withNaming({ prefix, tag }));
  await producer.connect();
  producers.push(producer);
  return producer;
}

describe('clickhouse sink: replays (real Kafka, registry and ClickHouse)', { timeout: 300000 }, () => {
  before(async () => {
    stack = await ensureStack();
    kafka = createKafka({ brokers: [stack.brokers], clientId: 'clickhouse-sink-replay-test' });
  });
  after(async () => {
    for (const p of producers) await p.disconnect().catch(() => undefined);
    for (const s of stores) {
      await dropTables(s);
      await s.close();
    }
  });

  it('by default (replayTags all, as turnstream sink runs) stores tagged topics beside the live ones: counts per tag, live queries unchanged, comparison, re-delivery', async () => {
    const prefix = uniquePrefix('ch-replay');
    const f = await family(kafka, stack.registryUrl, stack.clickhouseUrl, prefix);
    producers.push(f.producer);
    const data = learningDataset({ users: 2, sessionsPerUser: 2, turnsPerSession: 6, versions: 2, idPrefix: prefix });
    await f.producer.sendAll(data.events);

    // Replay "judge-b": the same pairs, judgements and samples (same ids), another judge's
    // verdict on every third judged turn (score negated), one more judgement id of its own.
    const derived = data.events.filter((e) => (DERIVED as readonly string[]).includes(e.id));
    const flipped = new Set<string>();
    let n = 0;
    const tagB = derived.map((e): OutgoingEvent => {
      if (e.id !== 'judgements') return { ...e, value: { ...e.value, tag: 'judge-b' } } as OutgoingEvent;
      const j = e.value as Judgement;
      const flip = n++ % 3 === 0 && j.score !== 0;
      if (flip) flipped.add(j.turnId);
      return { ...e, value: { ...j, score: flip ? -j.score : j.score, tag: 'judge-b' } };
    });
    const b = await replayFamily(f.codecs, prefix, 'judge-b');
    await b.sendAll(tagB);
    // A dead letter of the replay: counted under its tag, not among the live ones.
    await b.send('dlq', 'k', {
      topic: `${prefix}turnstream.replay.judge-b.pairs.v1`,
      partition: 0,
      offset: '7',
      key: null,
      value: null,
      code: 'TS_ERR_JUDGE_FAILED',
      message: 'all votes failed',
      stage: 'judge',
      failedAt: Date.now(),
      attempts: 1,
    });

    const store = new AnalyticsStore(f.analytics);
    stores.push(store);
    const groupId = `${prefix}sink`;
    const start = (): ClickhouseSinkHandle =>
      startSinkOn(kafka, f, {
        groupId,
        batchRows: 100,
        flushIntervalMs: 200,
        // replayTags left out: 'all', the sink's default (SINK_DEFAULTS), as `turnstream sink` always ran.
        replayDiscoveryMs: 500,
      });
    let sink = start();
    try {
      await sink.ready;
      assert.ok(
        sink.stats().topics.includes(`${prefix}turnstream.replay.judge-b.judgements.v1`),
        `subscribed to the replay's topics: ${sink.stats().topics.join(' ')}`,
      );

      // Replay "judge-c" starts after the sink: its topics are found and followed.
      const c = await replayFamily(f.codecs, prefix, 'judge-c');
      const tagC = derived
        .filter((e) => e.id === 'pairs')
        .slice(0, 5)
        .map((e) => ({ ...e, value: { ...e.value, tag: 'judge-c' } }) as OutgoingEvent);
      await c.sendAll(tagC);

      const live = await topicCounts(kafka, f.codecs, DERIVED);
      const expected: Record<string, Record<string, number>> = {
        pairs: { '': live.pairs.valid, 'judge-b': data.counts.pairs, 'judge-c': 5 },
        judgements: { '': live.judgements.valid, 'judge-b': data.counts.judgements },
        samples: { '': live.samples.valid, 'judge-b': data.counts.samples },
      };
      const matches = async (): Promise<boolean> => {
        for (const t of DERIVED) {
          const rows = await rowsByTag(store, t);
          const got = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, v.final]));
          if (JSON.stringify(Object.entries(got).sort()) !== JSON.stringify(Object.entries(expected[t]).sort())) return false;
        }
        return true;
      };
      await waitFor('rows per tag = topic counts (judge-c found after start)', matches, 90000);
      assert.ok(sink.stats().rejoins >= 1, 'the sink rejoined to follow judge-c');
      assert.equal(expected.pairs[''], data.counts.pairs);

      // Live queries see the live rows only, as before replays were stored.
      await assertFunnelCounts(store, data.counts);
      const liveScores = derived.filter((e) => e.id === 'judgements').map((e) => (e.value as Judgement).score);
      const mean = (xs: number[]): number => Math.round((1e4 * xs.reduce((a, x) => a + x, 0)) / xs.length) / 1e4;
      const rv = await rewardByVersion(store);
      assert.equal(
        rv.reduce((s, v) => s + v.judged, 0),
        data.counts.judgements,
      );
      assert.deepEqual(
        (await judgeStats(store)).map((j) => j.judgements),
        [data.counts.judgements],
      );
      assert.deepEqual(await dlqByReason(store), [], 'the replay dead letter is not a live one');
      assert.deepEqual(
        (await dlqByReason(store, { tag: 'judge-b' })).map((d) => [d.stage, d.count]),
        [['judge', 1]],
      );

      // A tag's scope and the comparison.
      const fb = await funnel(store, { tag: 'judge-b' });
      assert.deepEqual([fb.pairs, fb.judged, fb.samples], [data.counts.pairs, data.counts.judged, data.counts.samples]);
      const cmp = await compareRuns(store, { b: 'judge-b' });
      const bScores = tagB.filter((e) => e.id === 'judgements').map((e) => (e.value as Judgement).score);
      const dist = (xs: number[]) => [xs.filter((x) => x > 0).length, xs.filter((x) => x === 0).length, xs.filter((x) => x < 0).length];
      assert.deepEqual(
        [cmp.a.pairs, cmp.a.judged, cmp.a.samples, [cmp.a.positive, cmp.a.neutral, cmp.a.negative], cmp.a.mean_score],
        [data.counts.pairs, data.counts.judged, data.counts.samples, dist(liveScores), mean(liveScores)],
      );
      assert.deepEqual(
        [cmp.b.tag, cmp.b.pairs, cmp.b.judged, cmp.b.samples, [cmp.b.positive, cmp.b.neutral, cmp.b.negative], cmp.b.mean_score],
        ['judge-b', data.counts.pairs, data.counts.judged, data.counts.samples, dist(bScores), mean(bScores)],
      );
      assert.ok(flipped.size > 0);
      assert.deepEqual([cmp.both_judged, cmp.same_score], [data.counts.judged, data.counts.judged - flipped.size]);
      const cc = await compareRuns(store, { a: 'judge-b', b: 'judge-c' });
      assert.deepEqual([cc.b.pairs, cc.b.judged, cc.both_judged], [5, 0, 0]);

      const text = await buildReport(store, { tag: 'judge-b' });
      assert.match(text, /^Replay "judge-b"/);
      assert.match(text, new RegExp(`pairs\\s+${data.counts.pairs}\\s`));
      const cmpText = await buildReport(store, { compare: 'judge-b' });
      assert.match(cmpText, /Comparison: live vs judge-b/);
      assert.deepEqual(JSON.parse(await buildReport(store, { compare: 'judge-b', json: true })), cmp);

      // Forced re-delivery of everything, replays included: still one row per event and tag.
      let records = 0;
      const topics: string[] = [];
      for (const [codecs, ids] of [
        [f.codecs, ['turns', 'feedback', 'pairs', 'judgements', 'samples', 'weights', 'dlq']],
        [await f.codecs.withNaming({ prefix, tag: 'judge-b' }), ['pairs', 'judgements', 'samples', 'dlq']],
        [await f.codecs.withNaming({ prefix, tag: 'judge-c' }), ['pairs', 'judgements', 'samples', 'dlq']],
      ] as const) {
        for (const c of Object.values(await topicCounts(kafka, codecs, ids))) records += c.all;
        topics.push(...ids.map((id) => codecs.topic(id)));
      }
      await sink.stop();
      const admin = kafka.admin();
      await admin.connect();
      await admin.deleteGroups([groupId]);
      await admin.disconnect();
      sink = start();
      await sink.ready;
      await waitFor('the second sink re-read everything', async () => sink.stats().consumed >= records && sink.stats().buffered === 0);
      await caughtUp(kafka, groupId, topics);
      // (Raw row counts prove little here: background merges collapse small tables quickly.)
      const again = Object.values(expected)
        .flatMap((byTag) => Object.values(byTag))
        .reduce((a, x) => a + x, 0);
      assert.ok(sink.stats().rowsInserted >= again, `every row really was inserted again (${sink.stats().rowsInserted} ≥ ${again})`);
      for (const t of DERIVED) {
        const rows = await rowsByTag(store, t);
        for (const [tag, want] of Object.entries(expected[t]))
          assert.equal(rows[tag]?.final, want, `${t}[${tag || 'live'}]: one row per event`);
      }
      assert.deepEqual(await compareRuns(store, { b: 'judge-b' }), cmp);
      const counts = await tableCounts(store);
      assert.equal(counts.turns.final, data.counts.turns);
    } finally {
      await sink.stop();
    }
  });

  it('with replayTags [] the sink reads the live topics only', async () => {
    const prefix = uniquePrefix('ch-replay-off');
    const f = await family(kafka, stack.registryUrl, stack.clickhouseUrl, prefix);
    producers.push(f.producer);
    const b = await replayFamily(f.codecs, prefix, 'x');
    const data = learningDataset({ users: 1, sessionsPerUser: 1, turnsPerSession: 4, versions: 1, idPrefix: prefix });
    await f.producer.sendAll(data.events);
    await b.sendAll(data.events.filter((e) => e.id === 'pairs'));
    const store = new AnalyticsStore(f.analytics);
    stores.push(store);
    const sink = startSinkOn(kafka, f, {
      groupId: `${prefix}sink`,
      flushIntervalMs: 100,
      replayTags: [],
    });
    try {
      await sink.ready;
      assert.ok(sink.stats().topics.every((t) => !t.includes('.replay.')));
      await waitFor('live rows stored', async () => (await tableCounts(store)).samples.final === data.counts.samples);
      assert.deepEqual(Object.keys(await rowsByTag(store, 'pairs')), ['']);
    } finally {
      await sink.stop();
    }
  });

  it('migration 2 keeps existing rows, moves rows of a tagged family under their tag, and is safe to run twice at once', async () => {
    const prefix = uniquePrefix('ch-migrate');
    const analytics: AnalyticsOptions = { url: stack.clickhouseUrl, database: 'turnstream_test', tablePrefix: prefix };
    const store = new AnalyticsStore(analytics);
    stores.push(store);
    await migrate(
      store,
      MIGRATIONS.filter((m) => m.version === 1),
    );
    const pair = (id: string, tag: string, extra: Record<string, string> = {}) => ({
      pair_id: id,
      session_id: 's',
      policy_model_id: 'm',
      tag,
      _topic: 't',
      ...extra,
    });
    // Before version 2: a live pair, and one a sink stored from a tagged family.
    await store.insert(store.tables.pairs, [pair('p1', ''), pair('p2', 'old')]);
    const other = new AnalyticsStore(analytics);
    try {
      const upTo2 = MIGRATIONS.filter((m) => m.version <= 2);
      const [r1, r2] = await Promise.all([migrate(store, upTo2), migrate(other, upTo2)]);
      assert.deepEqual([r1.version, r2.version], [2, 2]);
    } finally {
      await other.close();
    }
    const name = store.tables.pairs.split('.')[1].replace(/`/g, '');
    const [keys] = await store.rows<{ sorting_key: string }>(
      `SELECT sorting_key FROM system.tables WHERE database = 'turnstream_test' AND name = '${name}'`,
    );
    assert.equal(keys.sorting_key.replace(/\s/g, ''), 'pair_id,replay_tag');
    const rows = await store.rows<{ pair_id: string; tag: string; replay_tag: string }>(
      `SELECT pair_id, tag, replay_tag FROM ${store.tables.pairs} FINAL ORDER BY pair_id, replay_tag`,
    );
    assert.deepEqual(
      rows.map((r) => [r.pair_id, r.tag, r.replay_tag]),
      [
        ['p1', '', ''],
        ['p2', 'old', 'old'],
      ],
    );
    assert.equal((await funnel(store)).pairs, 1);
    assert.equal((await funnel(store, { tag: 'old' })).pairs, 1);
    // The same id under another tag is another row; the same (id, tag) still collapses.
    await store.insert(store.tables.pairs, [pair('p1', 'x', { replay_tag: 'x' }), pair('p1', 'x', { replay_tag: 'x' }), pair('p1', '')]);
    assert.deepEqual([(await funnel(store)).pairs, (await funnel(store, { tag: 'x' })).pairs], [1, 1]);
    assert.deepEqual(
      (await migrate(store)).applied,
      MIGRATIONS.filter((m) => m.version > 2).map((m) => m.version),
      'only the later migrations are left',
    );
    assert.equal((await migrate(store)).applied.length, 0);
  });
});
