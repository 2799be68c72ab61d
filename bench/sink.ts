// The ClickHouse sink's throughput: rows/s from Kafka into ClickHouse (decode, map, buffer,
// insert, commit), against a baseline in the same run: the same rows inserted straight with
// @clickhouse/client (no Kafka, no decoding), in inserts of exactly the sizes the sink made
// (same tables, same row counts, same order, each flush's tables side by side as the sink
// inserts them), so the ratio is the sink's overhead, not a difference of insert sizes.
// `--batch` is the sink's SINK_BATCH_ROWS: the buffered rows that start a flush (a flush
// inserts everything buffered, so inserts are often bigger).
// Each round is a new consumer group over the same topics, then its baseline; medians reported.
//   turnstream bench sink [--json] [--users 20] [--batch 500] [--max-buffered 0] [--rounds 3]
import { AnalyticsStore, migrate, TABLE_IDS, toRow, type Row, type TableId } from '../warehouse/index.ts';
import type { BenchArgs } from './options.ts';
import { SINK_TOPICS, startClickhouseSink, type ClickhouseSinkOptions } from '../processors/index.ts';
import { EventProducer, type OutgoingEvent } from '../streams/index.ts';
import { createLogger } from '../core/index.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { learningDataset } from './sink-dataset.ts';
import { benchFamily, median, rawConsume, type BenchFamily } from './support.ts';
import { cores, CpuMeter, type CpuPhase } from './cpu.ts';

export const description =
  'rows/s from Kafka into ClickHouse through the sink, against direct @clickhouse/client inserts of the same rows in inserts of the same sizes';

export const options: BenchOptions = {
  users: { default: '20', help: 'users of the synthetic history (10 sessions × 20 turns each)' },
  batch: { default: '500', help: "the sink's batchRows (SINK_BATCH_ROWS): buffered rows that start a flush" },
  'max-buffered': {
    default: '0',
    min: 0,
    help: "the sink's maxBufferedRows (SINK_MAX_BUFFERED_ROWS): buffered rows at which reading waits; 0 = its default",
  },
  rounds: { default: '3', help: 'sink runs (a new consumer group each), each followed by its baseline; the figures are medians' },
};

interface Insert {
  table: TableId;
  rows: number;
  flush: number;
}

export interface SinkBenchResult extends BenchResult {
  rows: number;
  batch_rows: number;
  /** The sink's maxBufferedRows; null = its default. */
  max_buffered_rows: number | null;
  rounds: number;
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
  /** rows_per_s / baseline_rows_per_s (medians). */
  ratio: number;
  ratio_per_round: number[];
  /**
   * Ceilings on the Kafka side: the same topics read by a plain kafkajs consumer as the sink's
   * (a new group, read_committed), timed as the sink is, from joining until every record is in;
   * records only, then each decoded too. No sink on this client reads faster.
   */
  read_rows_per_s: number;
  read_decode_rows_per_s: number;
  /** CPU seconds by process (this one, Kafka, ClickHouse…) of the median round, the sink's and the baseline's, and how busy the machine was. */
  cpu: { cores: number; sink: CpuPhase; baseline: CpuPhase };
  clickhouse: string;
}

/** One run's fixed parts: the topic family, the baseline's and the sink's tables, the sink's settings. */
interface SinkBench {
  family: BenchFamily;
  base: AnalyticsStore;
  sinkStore: AnalyticsStore;
  sinkTables: ClickhouseSinkOptions['analytics'];
  meter: CpuMeter;
  /** Events produced, one row each. */
  rows: number;
  batchRows: number;
  maxBufferedRows: number | undefined;
}

/** One round's seconds (sink, baseline, the two read ceilings), the sink's batches and inserts, and CPU. */
interface Round {
  sink: number;
  base: number;
  read: number;
  decode: number;
  batches: number;
  inserts: Insert[];
  cpu: { sink: CpuPhase; baseline: CpuPhase };
}

/** Runs the sink benchmark (see the module comment). */
export async function run(args: BenchArgs): Promise<SinkBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const users = Number(o.users);
  const batchRows = Number(o.batch);
  const maxBufferedRows = Number(o['max-buffered']) || undefined;
  const rounds = Math.max(1, Number(o.rounds));
  const family = await benchFamily(config, 'sink', 6);
  const { endpoints: stack, prefix } = family;
  const database = 'turnstream_bench';
  const { username, password, tls } = config.clickhouse;
  const login = { url: stack.clickhouseUrl, database, username, password, tls };
  const base = new AnalyticsStore({ ...login, tablePrefix: `${prefix}base_` });
  const sinkTables = { ...login, tablePrefix: `${prefix}sink_` };
  const sinkStore = new AnalyticsStore(sinkTables);
  try {
    const data = learningDataset({ users, sessionsPerUser: 10, turnsPerSession: 20, versions: 5, idPrefix: prefix });
    const rows = data.events.length;
    progress(`producing ${rows} events to ${prefix}*`);
    await produce(family, data.events);
    // Mapped once up front (not timed): what the baseline inserts.
    const byTable = rowsByTable(family, data.events);
    await migrate(base);
    await migrate(sinkStore);
    const bench: SinkBench = { family, base, sinkStore, sinkTables, meter: new CpuMeter(family), rows, batchRows, maxBufferedRows };
    const measured: Round[] = [];
    for (let round = 1; round <= rounds; round++) {
      measured.push(await measureRound(bench, byTable, round, rounds, progress));
    }
    return summarize(bench, rounds, measured, await base.version());
  } finally {
    for (const s of [base, sinkStore]) {
      for (const t of [...TABLE_IDS, 'migrations' as const]) await s.command(`DROP TABLE IF EXISTS ${s.tables[t]}`).catch(() => undefined);
      await s.close();
    }
    await family.cleanup();
  }
}

async function produce(family: BenchFamily, events: OutgoingEvent[]): Promise<void> {
  const producer = new EventProducer(family.kafka, family.codecs);
  await producer.connect();
  for (let i = 0; i < events.length; i += 1000) await producer.sendAll(events.slice(i, i + 1000));
  await producer.disconnect();
}

function rowsByTable(family: BenchFamily, events: OutgoingEvent[]): Map<TableId, Row[]> {
  const byTable = new Map<TableId, Row[]>();
  events.forEach((e, i) => {
    const m = toRow(e.id, e.value, { topic: family.codecs.topic(e.id), partition: 0, offset: String(i) });
    const list = byTable.get(m.table);
    if (list) list.push(m.row);
    else byTable.set(m.table, [m.row]);
  });
  return byTable;
}

/** Empties both sets of tables, then times the sink, its baseline and the two read ceilings. */
async function measureRound(
  b: SinkBench,
  byTable: Map<TableId, Row[]>,
  round: number,
  rounds: number,
  progress: BenchArgs['progress'],
): Promise<Round> {
  for (const s of [b.base, b.sinkStore]) for (const t of TABLE_IDS) await s.command(`TRUNCATE TABLE ${s.tables[t]}`);
  progress(`round ${round}/${rounds}: sink reading the topics from the beginning`);
  const sink = await sinkRun(b, round);
  progress(`round ${round}/${rounds}: baseline, ${b.rows} rows straight into ClickHouse in the sink's ${sink.inserts.length} insert sizes`);
  const { value: baseSeconds, cpu: baseCpu } = await b.meter.measure(() => baselineRun(b.base, byTable, sink.inserts));
  progress(`round ${round}/${rounds}: plain kafkajs reading the same topics, then reading and decoding`);
  return {
    ...sink,
    cpu: { sink: sink.cpu, baseline: baseCpu },
    base: baseSeconds,
    read: await readRun(b, round, false),
    decode: await readRun(b, round, true),
  };
}

/** The rounds' medians (means for counts) as the result's fields. */
function summarize(b: SinkBench, rounds: number, measured: Round[], clickhouse: string): SinkBenchResult {
  const { rows } = b;
  const seconds = median(measured.map((m) => m.sink));
  const baselineSeconds = median(measured.map((m) => m.base));
  const inserts = Math.round(measured.reduce((n, m) => n + m.inserts.length, 0) / measured.length);
  const round3 = (x: number): number => Math.round(x * 1000) / 1000;
  return {
    rows,
    batch_rows: b.batchRows,
    max_buffered_rows: b.maxBufferedRows ?? null,
    rounds,
    rows_per_s: Math.round(rows / seconds),
    seconds: round3(seconds),
    batches: Math.round(measured.reduce((n, m) => n + m.batches, 0) / measured.length),
    inserts,
    mean_rows_per_insert: Math.round(rows / inserts),
    baseline_rows_per_s: Math.round(rows / baselineSeconds),
    baseline_seconds: round3(baselineSeconds),
    baseline: "direct @clickhouse/client inserts of the same rows, in the sink's insert sizes, each flush's tables side by side",
    ratio: round3(baselineSeconds / seconds),
    ratio_per_round: measured.map((m) => round3(m.base / m.sink)),
    read_rows_per_s: Math.round(rows / median(measured.map((m) => m.read))),
    read_decode_rows_per_s: Math.round(rows / median(measured.map((m) => m.decode))),
    cpu: {
      cores: cores(),
      sink: CpuMeter.median(measured.map((m) => m.cpu.sink)),
      baseline: CpuMeter.median(measured.map((m) => m.cpu.baseline)),
    },
    clickhouse,
  };
}

/** One pass of a new sink group over every topic; resolves once every row is stored and counted. */
async function sinkRun(b: SinkBench, round: number): Promise<{ sink: number; batches: number; inserts: Insert[]; cpu: CpuPhase }> {
  const { family, rows, sinkStore } = b;
  const inserts: Insert[] = [];
  const sink = startClickhouseSink({
    kafka: family.kafka,
    codecs: family.codecs,
    analytics: b.sinkTables,
    groupId: `${family.prefix}sink-${round}`,
    batchRows: b.batchRows,
    maxBufferedRows: b.maxBufferedRows,
    logger: createLogger('bench-sink', 'warn'),
    onInsert: (table, n, flush) => void inserts.push({ table, rows: n, flush }),
  });
  await sink.ready;
  const { seconds, cpu } = await b.meter.measure(async () => {
    const t1 = performance.now();
    while (sink.stats().rowsInserted < rows) {
      if (performance.now() - t1 > 600_000) throw new Error(`sink stored ${sink.stats().rowsInserted} of ${rows} rows in 10 minutes`);
      await new Promise((r) => setTimeout(r, 5));
    }
  });
  const batches = sink.stats().batches;
  await sink.stop();
  const [check] = await sinkStore.rows<{ n: number }>(
    `SELECT ${TABLE_IDS.map((t) => `(SELECT count() FROM ${sinkStore.tables[t]} FINAL)`).join(' + ')} AS n`,
  );
  if (Number(check.n) !== rows) throw new Error(`sink tables hold ${check.n} rows, expected ${rows}`);
  return { sink: seconds, batches, inserts, cpu };
}

/** A plain consumer over the sink's topics, as the sink's consumer is set up; seconds from joining until all `rows` are read. */
function readRun(b: SinkBench, round: number, decode: boolean): Promise<number> {
  const { kafka, codecs, prefix } = b.family;
  const topics = SINK_TOPICS.map((id) => codecs.topic(id));
  return rawConsume(kafka, topics, b.rows, `${prefix}read-${decode ? 'decode' : 'only'}-${round}`, {
    fromJoin: true,
    maxWaitTimeInMs: 100,
    each: decode ? (topic, m) => void codecs.of(codecs.idOf(topic)!).decodeNow(m.value!) : undefined,
  });
}

/** The same rows in the sink's insert sizes, each flush's tables side by side, as the sink makes them. */
async function baselineRun(base: AnalyticsStore, mapped: Map<TableId, Row[]>, inserts: Insert[]): Promise<number> {
  const taken = new Map<TableId, number>();
  const flushes = new Map<number, Array<{ table: TableId; rows: Row[] }>>();
  for (const { table, rows: n, flush } of inserts) {
    const from = taken.get(table) ?? 0;
    const group = flushes.get(flush) ?? [];
    group.push({ table, rows: mapped.get(table)!.slice(from, from + n) });
    flushes.set(flush, group);
    taken.set(table, from + n);
  }
  const t0 = performance.now();
  for (const group of flushes.values()) await Promise.all(group.map((g) => base.insert(base.tables[g.table], g.rows)));
  return (performance.now() - t0) / 1000;
}
