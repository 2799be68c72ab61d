/** Shared steps of the analytics integration tests: an isolated topic family and tables. */
import assert from 'node:assert/strict';
import type { Kafka } from 'kafkajs';
import { funnel, type Funnel } from '../../../analytics/index.ts';
import type { Dataset } from '../../../bench/sink-dataset.ts';
import { startClickhouseSink, type ClickhouseSinkOptions } from '../../../processors/clickhouse-sink/index.ts';
import {
  AnalyticsStore,
  migrate,
  TABLE_IDS,
  toRow,
  type AnalyticsOptions,
  type MappedRow,
  type TableId,
} from '../../../warehouse/index.ts';
import type { TopicId } from '../../../schemas/index.ts';
import { createEventCodecs, ensureTopics, EventProducer, readToEnd, type EventCodecs } from '../../../streams/index.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';
import { waitFor as waitForCondition } from '../../support/wait-for.ts';

export interface Family {
  prefix: string;
  codecs: EventCodecs;
  producer: EventProducer;
  analytics: AnalyticsOptions;
}

export async function family(kafka: Kafka, registryUrl: string, clickhouseUrl: string, prefix: string): Promise<Family> {
  await ensureTopics(kafka, { naming: { prefix }, partitions: 3 });
  const codecs = await createEventCodecs({ registryUrl, naming: { prefix } });
  const producer = new EventProducer(kafka, codecs);
  await producer.connect();
  return { prefix, codecs, producer, analytics: { url: clickhouseUrl, database: 'turnstream_test', tablePrefix: prefix } };
}

/** Records per topic that decode (what the tables must hold), and all records. */
export async function topicCounts(
  kafka: Kafka,
  codecs: EventCodecs,
  ids: readonly TopicId[],
): Promise<Record<string, { valid: number; all: number; ids: Set<string> }>> {
  const out: Record<string, { valid: number; all: number; ids: Set<string> }> = {};
  for (const id of ids) {
    const c = { valid: 0, all: 0, ids: new Set<string>() };
    await readToEnd(kafka, codecs.topic(id), async (r) => {
      c.all++;
      if (!r.value) return;
      try {
        await codecs.of(id).decode(r.value);
        c.valid++;
      } catch {
        // garbage: the sink dead-letters it
      }
    });
    out[id] = c;
  }
  return out;
}

/** Rows per table, collapsed (FINAL) and physically stored. */
export async function tableCounts(store: AnalyticsStore): Promise<Record<string, { final: number; raw: number }>> {
  const out: Record<string, { final: number; raw: number }> = {};
  for (const t of TABLE_IDS) {
    const [r] = await store.rows<{ f: number; r: number }>(
      `SELECT (SELECT count() FROM ${store.tables[t]} FINAL) AS f, (SELECT count() FROM ${store.tables[t]}) AS r`,
    );
    out[t] = { final: Number(r.f), raw: Number(r.r) };
  }
  return out;
}

export async function dropTables(store: AnalyticsStore): Promise<void> {
  for (const t of [...TABLE_IDS, 'migrations' as const])
    await store.command(`DROP TABLE IF EXISTS ${store.tables[t]}`).catch(() => undefined);
}

/** A store of fresh tables on the stack's ClickHouse (test database, a unique prefix from `name`), migrated unless `migrated` is false. */
export async function testStore(name: string, opts: { migrated?: boolean } = {}): Promise<AnalyticsStore> {
  const stack = await ensureStack();
  const store = new AnalyticsStore({
    url: stack.clickhouseUrl,
    database: 'turnstream_test',
    tablePrefix: uniquePrefix(name).replace(/\W/g, '_'),
  });
  if (opts.migrated !== false) await migrate(store);
  return store;
}

/** Drops the tables of each store given (one not made yet is passed over) and closes it. */
export async function discardStores(...stores: Array<AnalyticsStore | undefined>): Promise<void> {
  for (const s of stores) {
    if (!s) continue;
    await dropTables(s);
    await s.close();
  }
}

/** The sink on the family's topics and tables, with `o` (group, batching, retries). */
export function startSinkOn(kafka: Kafka, f: Family, o: Omit<ClickhouseSinkOptions, 'kafka' | 'codecs' | 'analytics'>) {
  return startClickhouseSink({ kafka, codecs: f.codecs, analytics: f.analytics, ...o });
}

/** The live funnel of `store` counts exactly the dataset's turns, main turns, pairs, judged pairs and samples. */
export async function assertFunnelCounts(store: AnalyticsStore, counts: Dataset['counts']): Promise<Funnel> {
  const fu = await funnel(store);
  assert.deepEqual(
    { turns: fu.turns, main: fu.main, pairs: fu.pairs, judged: fu.judged, samples: fu.samples },
    { turns: counts.turns, main: counts.main, pairs: counts.pairs, judged: counts.judged, samples: counts.samples },
  );
  return fu;
}

/** Rows by the table they go to, in their order. */
export function rowsByTable(rows: MappedRow[]): Map<TableId, Array<MappedRow['row']>> {
  const byTable = new Map<TableId, Array<MappedRow['row']>>();
  for (const r of rows) byTable.set(r.table, [...(byTable.get(r.table) ?? []), r.row]);
  return byTable;
}

/** Rows as the sink maps them, each record on partition 0 of its topic at the next offset: `add` one, `rows` so far. */
export function rowList(): { rows: MappedRow[]; add: (id: TopicId, value: unknown) => void } {
  const rows: MappedRow[] = [];
  return { rows, add: (id, value) => void rows.push(toRow(id, value, { topic: id, partition: 0, offset: String(rows.length) })) };
}

/** Inserts `rows` as JSONEachRow, one insert per table. */
export async function insertRows(store: AnalyticsStore, rows: MappedRow[]): Promise<void> {
  for (const [table, list] of rowsByTable(rows)) await store.insert(store.tables[table], list);
}

/** The shared waitFor (test/support/wait-for.ts) with this folder's defaults: 90 s, a check every 300 ms. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 90000, everyMs = 300): Promise<void> {
  await waitForCondition(what, check, { timeoutMs, intervalMs: everyMs });
}
