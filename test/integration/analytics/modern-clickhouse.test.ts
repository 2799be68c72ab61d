/**
 * The analytics DDL and every report and dashboard query on a current ClickHouse (26.x, npm chdb
 * in-process) as well as on the stack's server (Debian's 18.16): the migrations apply on both,
 * every query runs on both, and both give the same figures for the same rows.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildDashboardApp, buildReport, compareRuns, listRuns, overview, type Overview } from '../../../analytics/index.ts';
import { AnalyticsStore, migrate, MIGRATIONS, REPLAY_TABLES, toRow, type MappedRow } from '../../../warehouse/index.ts';
import { learningDataset } from '../../../bench/sink-dataset.ts';
import { exampleTurn } from '../../support/fixtures.ts';
import { ensureChdb } from '../../support/chdb.ts';
import { dropTables, insertRows, testStore } from './support.ts';

/** Rows as the sink writes them: a learning history, its replay under tag "b", and imported turns. */
function rows(): MappedRow[] {
  const data = learningDataset({
    users: 3,
    sessionsPerUser: 2,
    turnsPerSession: 5,
    versions: 3,
    idPrefix: 'm',
    startMs: 1_760_000_000_000,
  });
  const out: MappedRow[] = [];
  data.events.forEach((e, i) => {
    out.push(toRow(e.id, e.value, { topic: e.id, partition: 0, offset: String(i) }));
    // The same derived events again as a replay's, under their tag.
    if (REPLAY_TABLES.has(toRow(e.id, e.value, { topic: e.id, partition: 0, offset: '0' }).table)) {
      out.push(toRow(e.id, e.value, { topic: `turnstream.replay.b.${e.id}`, partition: 0, offset: String(i), replayTag: 'b' }));
    }
  });
  for (let i = 0; i < 3; i++) {
    const t = exampleTurn({
      turnId: `imported-${i}`,
      sessionId: 'imported',
      sessionSource: 'IMPORTED',
      latencyMs: 0,
      requestedAt: 1_760_000_000_000 + i,
    });
    out.push(toRow('turns', t, { topic: 'turns', partition: 1, offset: String(i) }));
  }
  return out;
}

/** The figures of an overview that must agree across servers (no clocks, no float noise). */
const figures = (o: Overview) => ({
  funnel: o.funnel,
  imported: o.imported,
  reward_by_version: o.reward_by_version.map((v) => ({
    ...v,
    mean_score: v.mean_score?.toFixed(3),
    mean_reward: v.mean_reward?.toFixed(3),
  })),
  judges: o.judges.map((j) => [j.judge_id, j.judgements, j.votes, j.votes_valid, j.all_failed, j.no_votes, j.positive, j.negative]),
  latency_turns: o.latency.map((l) => [l.turn_type, l.turns]),
  users: o.users.map((u) => [u.user_id, u.turns, u.judged]).sort(),
  sessions: o.sessions.length,
  dlq: o.dlq.map((d) => [d.stage, d.code, d.count]),
});

describe('analytics on ClickHouse 26.x (chdb) and 18.16', { timeout: 600_000 }, () => {
  let modern: AnalyticsStore;
  let old: AnalyticsStore;
  let dir: string;

  before(async () => {
    const chdb = await ensureChdb();
    dir = await mkdtemp(join(tmpdir(), 'ts-chdb-'));
    modern = new AnalyticsStore({ database: 'turnstream_test', connection: chdb.connection(join(dir, 'data')) });
    old = await testStore('modern', { migrated: false });
  });
  after(async () => {
    await old?.close();
    if (old) await dropTables(new AnalyticsStore(old.options));
    await modern?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the migrations apply on both servers, and again as a no-op', async () => {
    assert.match(await modern.version(), /^2[6-9]\./, 'chdb is a current ClickHouse');
    for (const store of [modern, old]) {
      await migrate(store);
      await migrate(store);
      const [v] = await store.rows<{ v: number }>(`SELECT max(version) AS v FROM ${store.tables.migrations}`);
      assert.equal(Number(v.v), MIGRATIONS.at(-1)!.version);
    }
    const data = rows();
    await insertRows(modern, data);
    await insertRows(old, data);
  });

  it('every report and dashboard query runs on both and gives the same figures', async () => {
    for (const scope of [{}, { source: 'imported' as const }, { tag: 'b' }]) {
      const [a, b] = [await overview(modern, scope), await overview(old, scope)];
      assert.deepEqual(figures(a), figures(b), JSON.stringify(scope));
      assert.ok(a.funnel.pairs > 0 || scope.source === 'imported');
    }
    assert.deepEqual(await listRuns(modern), await listRuns(old));
    assert.deepEqual(await compareRuns(modern, { a: '', b: 'b' }), await compareRuns(old, { a: '', b: 'b' }));
    for (const store of [modern, old]) {
      for (const o of [{}, { json: true }, { tag: 'b' }, { source: 'imported' as const }, { compare: 'b' }])
        assert.ok((await buildReport(store, o)).length > 50);
      const app = buildDashboardApp({ store });
      try {
        for (const path of [
          'overview',
          'funnel',
          'reward-by-version',
          'reward-over-time',
          'judges',
          'latency',
          'users',
          'sessions',
          'dlq',
          'runs',
          'compare?a=&b=b',
        ]) {
          for (const q of path.includes('?') ? [''] : ['', '?tag=b', '?source=imported']) {
            const res = await app.inject({ url: `/api/${path}${q}` });
            assert.equal(res.statusCode, 200, `${path}${q} on ${await store.version()}: ${res.body.slice(0, 300)}`);
          }
        }
      } finally {
        await app.close();
      }
    }
  });
});
