// The ClickHouse sink's throughput: rows/s from Kafka into ClickHouse (decode, map, buffer,
// insert, commit), against a baseline in the same run: the same rows inserted straight with
// @clickhouse/client (no Kafka, no decoding), in inserts of exactly the sizes the sink made
// (same tables, same row counts, same order, each flush's tables side by side as the sink
// inserts them), so the ratio is the sink's overhead, not a difference of insert sizes.
// `--batch` is the sink's SINK_BATCH_ROWS: the buffered rows that start a flush (a flush
// inserts everything buffered, so inserts are often bigger).
//   turnstream bench sink [--json] [--users 20] [--batch 500]
import { AnalyticsStore, migrate, TABLE_IDS, toRow, type Row, type TableId } from '../analytics/index.ts';
import type { BenchArgs } from '../cli/commands/bench.ts';
import { startClickhouseSink } from '../processors/clickhouse-sink/index.ts';
import { createLogger, EventProducer } from '../streams/index.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { learningDataset } from './sink-dataset.ts';
import { benchFamily } from './support.ts';

export const description =
  'rows/s from Kafka into ClickHouse through the sink, against direct @clickhouse/client inserts of the same rows in inserts of the same sizes';

export const options: BenchOptions = {
  users: { default: '20', help: 'users of the synthetic history (10 sessions × 20 turns each)' },
  batch: { default: '500', help: "the sink's batchRows (SINK_BATCH_ROWS): buffered rows that start a flush" },
};

export interface SinkBenchResult extends BenchResult {
  rows: number;
  batch_rows: number;
  /** Kafka → sink → ClickHouse, from the sink joining its group until every row is stored. */
  rows_per_s: number;
  seconds: number;
  batches: number;
  /** Inserts (one per table per flush) and their mean size: what the baseline repeats. */
  inserts: number;
  mean_rows_per_insert: number;
  /** The same rows, inserted directly with @clickhouse/client in the sink's insert sizes. */
  baseline_rows_per_s: number;
  baseline_seconds: number;
  /** rows_per_s / baseline_rows_per_s. */
  ratio: number;
  clickhouse: string;
}

export async function run(args: BenchArgs): Promise<SinkBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const users = Number(o.users);
  const batchRows = Number(o.batch);
  const family = await benchFamily(config, 'sink', 6);
  const { endpoints: stack, prefix, kafka, codecs } = family;
  const database = 'turnstream_bench';
  const base = new AnalyticsStore({ url: stack.clickhouseUrl, database, tablePrefix: `${prefix}base_` });
  const sinkTables = { url: stack.clickhouseUrl, database, tablePrefix: `${prefix}sink_` };
  const sinkStore = new AnalyticsStore(sinkTables);
  try {
    const data = learningDataset({ users, sessionsPerUser: 10, turnsPerSession: 20, versions: 5, idPrefix: prefix });
    const rows = data.events.length;
    progress(`producing ${rows} events to ${prefix}*`);
    const producer = new EventProducer(kafka, codecs);
    await producer.connect();
    for (let i = 0; i < rows; i += 1000) await producer.sendAll(data.events.slice(i, i + 1000));
    await producer.disconnect();

    progress('sink: reading the topics from the beginning');
    const inserts: Array<{ table: TableId; rows: number; flush: number }> = [];
    const sink = startClickhouseSink({
      kafka,
      codecs,
      analytics: sinkTables,
      groupId: `${prefix}sink`,
      batchRows,
      logger: createLogger('bench-sink', 'warn'),
      onInsert: (table, n, flush) => void inserts.push({ table, rows: n, flush }),
    });
    await sink.ready;
    const t1 = performance.now();
    while (sink.stats().rowsInserted < rows) {
      if (performance.now() - t1 > 600_000) throw new Error(`sink stored ${sink.stats().rowsInserted} of ${rows} rows in 10 minutes`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const seconds = (performance.now() - t1) / 1000;
    const stats = sink.stats();
    await sink.stop();
    const [check] = await sinkStore.rows<{ n: number }>(
      `SELECT ${TABLE_IDS.map((t) => `(SELECT count() FROM ${sinkStore.tables[t]} FINAL)`).join(' + ')} AS n`,
    );
    if (Number(check.n) !== rows) throw new Error(`sink tables hold ${check.n} rows, expected ${rows}`);

    // Baseline: the same rows, mapped up front (not timed), inserted in the sink's insert sizes.
    await migrate(base);
    const byTable = new Map<TableId, Row[]>();
    data.events.forEach((e, i) => {
      const m = toRow(e.id, e.value, { topic: codecs.topic(e.id), partition: 0, offset: String(i) });
      const list = byTable.get(m.table);
      if (list) list.push(m.row);
      else byTable.set(m.table, [m.row]);
    });
    progress(`baseline: ${rows} rows straight into ClickHouse in the sink's ${inserts.length} insert sizes`);
    // Each flush's inserts side by side, as the sink makes them; the rows sliced beforehand.
    const taken = new Map<TableId, number>();
    const flushes = new Map<number, Array<{ table: TableId; rows: Row[] }>>();
    for (const { table, rows: n, flush } of inserts) {
      const from = taken.get(table) ?? 0;
      const group = flushes.get(flush) ?? [];
      group.push({ table, rows: byTable.get(table)!.slice(from, from + n) });
      flushes.set(flush, group);
      taken.set(table, from + n);
    }
    const t0 = performance.now();
    for (const group of flushes.values()) await Promise.all(group.map((g) => base.insert(base.tables[g.table], g.rows)));
    const baselineSeconds = (performance.now() - t0) / 1000;
    const rowsPerS = rows / seconds;
    const baselineRowsPerS = rows / baselineSeconds;
    return {
      rows,
      batch_rows: batchRows,
      rows_per_s: Math.round(rowsPerS),
      seconds: Math.round(seconds * 1000) / 1000,
      batches: stats.batches,
      inserts: inserts.length,
      mean_rows_per_insert: Math.round(rows / inserts.length),
      baseline_rows_per_s: Math.round(baselineRowsPerS),
      baseline_seconds: Math.round(baselineSeconds * 1000) / 1000,
      baseline: "direct @clickhouse/client inserts of the same rows, in the sink's insert sizes, each flush's tables side by side",
      ratio: Math.round((rowsPerS / baselineRowsPerS) * 1000) / 1000,
      clickhouse: await base.version(),
    };
  } finally {
    for (const s of [base, sinkStore]) {
      for (const t of [...TABLE_IDS, 'migrations' as const]) await s.command(`DROP TABLE IF EXISTS ${s.tables[t]}`).catch(() => undefined);
      await s.close();
    }
    await family.cleanup();
  }
}
