/**
 * The sink's RowBinary inserts store exactly what JSONEachRow inserts of the same rows store,
 * in every table, on the real ClickHouse: the same rows into two sets of tables, one per
 * format, read back column by column. Covers every column type of the migrations, replay
 * rows, text in many scripts, and a dead letter.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RowBinaryEncoder, TABLE_IDS, toRow, type AnalyticsStore, type MappedRow } from '../../../warehouse/index.ts';
import { learningDataset } from '../../../bench/sink-dataset.ts';
import { exampleDeadLetter, exampleReward, exampleTurn } from '../../support/fixtures.ts';
import { discardStores, rowsByTable, testStore } from './support.ts';

function rows(): MappedRow[] {
  const data = learningDataset({
    users: 2,
    sessionsPerUser: 2,
    turnsPerSession: 4,
    versions: 2,
    idPrefix: 'rb',
    startMs: 1_760_000_000_000,
  });
  const out = data.events.map((e, i) => toRow(e.id, e.value, { topic: e.id, partition: i % 3, offset: String(i) }));
  for (const e of data.events.filter((x) => x.id === 'judgements'))
    out.push(toRow(e.id, e.value, { topic: 'turnstream.replay.t.judgements', partition: 0, offset: '1', replayTag: 't' }));
  out.push(
    toRow(
      'turns',
      exampleTurn({
        turnId: 'scripts',
        response: { content: 'naïve café — 日本語 — Ελληνικά — 😀\n\t"quoted" \\ back', toolCalls: [], finishReason: 'stop' },
      }),
      { topic: 'turns', partition: 2, offset: '9007199254740991' },
    ),
  );
  out.push(toRow('dlq', exampleDeadLetter({ value: Buffer.from([0, 255, 1]) }), { topic: 'dlq', partition: 0, offset: '0' }));
  out.push(toRow('rewards', exampleReward(), { topic: 'rewards', partition: 0, offset: '0' }));
  out.push(
    toRow('rewards', exampleReward({ rewardId: 'no-rollout', rollout: null, passed: null, policyModelId: null, policyVersion: null }), {
      topic: 'rewards',
      partition: 1,
      offset: '3',
    }),
  );
  return out;
}

describe('RowBinary inserts (the sink) against JSONEachRow', { timeout: 120_000 }, () => {
  let binary: AnalyticsStore;
  let json: AnalyticsStore;

  before(async () => {
    binary = await testStore('rowbin-b');
    json = await testStore('rowbin-j');
  });
  after(async () => {
    await discardStores(binary, json);
  });

  it('stores the same values in every column of every table', async () => {
    const byTable = rowsByTable(rows());
    assert.deepEqual([...byTable.keys()].sort(), [...TABLE_IDS].sort(), 'the rows cover every table');
    for (const [table, list] of byTable) {
      const columns = await binary.columns(binary.tables[table]);
      assert.deepEqual(
        columns.map((c) => c.name).sort(),
        Object.keys(list[0]!).sort(),
        `${table}: the rows fill exactly the table's columns`,
      );
      const encoder = new RowBinaryEncoder(columns);
      for (const row of list) encoder.add(row);
      await binary.insertRowBinary(binary.tables[table], columns, encoder.take().chunks);
      await json.insert(json.tables[table], list);
      const order = columns.map((c) => `\`${c.name}\``).join(', ');
      const [fromBinary, fromJson] = await Promise.all(
        [binary, json].map((s) => s.rows<Record<string, unknown>>(`SELECT * FROM ${s.tables[table]} ORDER BY ${order}`)),
      );
      assert.equal(fromBinary!.length, list.length, `${table}: every row stored`);
      assert.deepEqual(fromBinary, fromJson, `${table}: same values`);
    }
  });

  it('inserts only the columns an INSERT can fill: not MATERIALIZED or ALIAS ones', async () => {
    const t = binary.tables.turns.replace(/turns`$/, 'computed`');
    await binary.command(
      `CREATE TABLE ${t} (id String, n UInt32, twice UInt32 MATERIALIZED n * 2, label String ALIAS concat(id, '!')) ENGINE = Memory`,
    );
    try {
      const columns = await binary.columns(t);
      assert.deepEqual(columns, [
        { name: 'id', type: 'String' },
        { name: 'n', type: 'UInt32' },
      ]);
      const encoder = new RowBinaryEncoder(columns);
      encoder.add({ id: 'a', n: 21 });
      await binary.insertRowBinary(t, columns, encoder.take().chunks);
      assert.deepEqual(await binary.rows(`SELECT id, n, twice, label FROM ${t}`), [{ id: 'a', n: 21, twice: 42, label: 'a!' }]);
    } finally {
      await binary.command(`DROP TABLE IF EXISTS ${t}`);
    }
  });
});
