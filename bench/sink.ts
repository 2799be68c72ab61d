// The ClickHouse sink's throughput: rows/s from Kafka into ClickHouse (decode, map, batch,
// insert, commit), against a baseline in the same run: the same rows inserted straight with
// @clickhouse/client (no Kafka, no decoding), in batches of the same size.
//   turnstream bench sink [--json] [--users 20] [--batch 500]
import { AnalyticsStore, migrate, TABLE_IDS, toRow, type Row, type TableId } from '../analytics/index.ts';
import type { BenchArgs } from '../cli/commands/bench.ts';
import { startClickhouseSink } from '../processors/clickhouse-sink/index.ts';
import { createLogger, EventProducer } from '../streams/index.ts';
import { learningDataset } from './sink-dataset.ts';
import { benchFamily, intOption } from './support.ts';

export interface SinkBenchResult {
  rows: number;
  batch_rows: number;
  /** Kafka → sink → ClickHouse, from the sink joining its group until every row is stored. */
  rows_per_s: number;
  seconds: number;
  batches: number;
  /** The same rows, inserted directly with @clickhouse/client. */
  baseline_rows_per_s: number;
  baseline_seconds: number;
  /** rows_per_s / baseline_rows_per_s. */
  ratio: number;
  clickhouse: string;
}

/** A positive integer option (0 or a bad value: the default). */
const int = (v: string | undefined, d: number): number => intOption(v, d) || d;

export async function run(args: BenchArgs): Promise<SinkBenchResult> {
  const { config, progress } = args;
  const users = int(args.options.users, 20);
  const batchRows = int(args.options.batch, 500);
  const { endpoints: stack, prefix, kafka, codecs } = await benchFamily(config, 'sink', 6);
  const data = learningDataset({ users, sessionsPerUser: 10, turnsPerSession: 20, versions: 5, idPrefix: prefix });
  const rows = data.events.length;
  progress(`producing ${rows} events to ${prefix}*`);
  const producer = new EventProducer(kafka, codecs);
  await producer.connect();
  for (let i = 0; i < rows; i += 1000) await producer.sendAll(data.events.slice(i, i + 1000));
  await producer.disconnect();

  const database = 'turnstream_bench';
  const sinkTables = { url: stack.clickhouseUrl, database, tablePrefix: `${prefix}sink_` };
  const baseTables = { url: stack.clickhouseUrl, database, tablePrefix: `${prefix}base_` };
  const base = new AnalyticsStore(baseTables);
  const sinkStore = new AnalyticsStore(sinkTables);
  try {
    // Baseline: map up front (not timed), then insert batch by batch as the sink would.
    await migrate(base);
    const mapped = data.events.map((e, i) => toRow(e.id, e.value, { topic: codecs.topic(e.id), partition: 0, offset: String(i) }));
    progress(`baseline: ${rows} rows straight into ClickHouse in batches of ${batchRows}`);
    const t0 = performance.now();
    for (let i = 0; i < mapped.length; i += batchRows) {
      const byTable = new Map<TableId, Row[]>();
      for (const m of mapped.slice(i, i + batchRows)) {
        const list = byTable.get(m.table) ?? [];
        list.push(m.row);
        byTable.set(m.table, list);
      }
      for (const [table, list] of byTable) await base.insert(base.tables[table], list);
    }
    const baselineSeconds = (performance.now() - t0) / 1000;

    progress('sink: reading the topics from the beginning');
    const sink = startClickhouseSink({
      kafka,
      codecs,
      analytics: sinkTables,
      groupId: `${prefix}sink`,
      batchRows,
      logger: createLogger('bench-sink', 'warn'),
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
    const rowsPerS = rows / seconds;
    const baselineRowsPerS = rows / baselineSeconds;
    return {
      rows,
      batch_rows: batchRows,
      rows_per_s: Math.round(rowsPerS),
      seconds: Math.round(seconds * 1000) / 1000,
      batches: stats.batches,
      baseline_rows_per_s: Math.round(baselineRowsPerS),
      baseline_seconds: Math.round(baselineSeconds * 1000) / 1000,
      ratio: Math.round((rowsPerS / baselineRowsPerS) * 1000) / 1000,
      clickhouse: await base.version(),
    };
  } finally {
    for (const s of [base, sinkStore]) {
      for (const t of [...TABLE_IDS, 'migrations' as const]) await s.command(`DROP TABLE IF EXISTS ${s.tables[t]}`).catch(() => undefined);
      await s.close();
    }
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([`${prefix}sink`]).catch(() => undefined);
    await admin.deleteTopics({ topics: (await admin.listTopics()).filter((t) => t.startsWith(prefix)) }).catch(() => undefined);
    await admin.disconnect();
  }
}
