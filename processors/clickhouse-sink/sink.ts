/**
 * Every topic → ClickHouse, on the "flush, then commit" consumer (streams/flush-consumer.ts):
 * each record is decoded, mapped to a row (analytics/store/rows.ts) and encoded as RowBinary (analytics/store/row-binary.ts); a batch is
 * inserted when it reaches `batchRows` or `flushIntervalMs`, and only then are its offsets
 * committed. A failed insert pauses fetching and retries with backoff until ClickHouse is
 * back, so nothing is lost and the process does not crash. Tables are ReplacingMergeTrees
 * keyed by event id: a record delivered twice (crash before commit, rebalance, offset
 * reset) collapses into one row.
 *
 * With `replayTags` it also follows the tagged topics of replays (matched against the
 * cluster's topics when it joins, and looked for again every `replayDiscoveryMs`: a new one
 * makes it flush, commit and rejoin). Each row carries its topic's tag (`replay_tag`, part of
 * the row's key), so a replayed pair never replaces the live pair of the same id.
 *
 * A record that cannot be decoded or mapped goes to the DLQ with its reason; a record of
 * the DLQ itself that fails is counted and skipped (dead-lettering it would loop).
 */
import type { Admin, KafkaMessage } from 'kafkajs';
import { AnalyticsStore, migrate, toRow, TABLE_OF } from '../../analytics/store/index.ts';
import {
  createLogger,
  deadLetter,
  ErrorCodes,
  EventProducer,
  FlushConsumer,
  isRetriable,
  retry,
  toTurnstreamError,
  TurnstreamError,
  type EventCodecs,
} from '../../streams/index.ts';
import { sinkMetrics } from './metrics.ts';
import { SINK_TOPICS, type ClickhouseSinkOptions } from './options.ts';
import { isDerived, ReplayTopics, type ReplayTopic } from './replay-topics.ts';
import { RowBuffer } from './row-buffer.ts';

export interface SinkStats {
  /** Records read from Kafka (all topics). */
  consumed: number;
  rowsInserted: number;
  batches: number;
  /** Failed insert attempts. */
  insertFailures: number;
  deadLettered: number;
  skipped: number;
  buffered: number;
  /** Fetching is paused (ClickHouse failing). */
  paused: boolean;
  /** Offsets committed (partition commits). */
  commits: number;
  lastError: string | undefined;
  /** Topics the consumer is subscribed to (live, then replay-tagged). */
  topics: string[];
  /** Times the consumer rejoined to pick up new replay topics. */
  rejoins: number;
}

export interface ClickhouseSinkHandle {
  /** Resolves once the tables exist and the consumer has joined its group. */
  ready: Promise<void>;
  /** Flushes what it can, commits, leaves the group. */
  stop(): Promise<void>;
  stats(): SinkStats;
  store: AnalyticsStore;
}

export function startClickhouseSink(o: ClickhouseSinkOptions): ClickhouseSinkHandle {
  const stage = o.stage ?? 'clickhouse-sink';
  const log = o.logger ?? createLogger(stage);
  const store = new AnalyticsStore(o.analytics);
  const ids = (o.topics ?? SINK_TOPICS).filter((id) => TABLE_OF[id] !== undefined);
  const prefix = o.codecs.naming.prefix ?? '';
  const familyTag = o.codecs.naming.tag ?? '';
  /** The family's own topics (live, unless its codecs carry a tag) → id and tag. */
  const family = new Map<string, ReplayTopic>(
    ids.map((id) => [o.codecs.topic(id), { id, tag: isDerived(id, prefix) ? familyTag : '' }] as const),
  );
  const replayTags = o.replayTags ?? [];
  const replay = replayTags === 'all' || replayTags.length > 0 ? new ReplayTopics(prefix, ids, replayTags) : undefined;
  const routeOf = (topic: string): ReplayTopic | undefined => family.get(topic) ?? replay?.match(topic);
  const discoveryMs = o.replayDiscoveryMs ?? 10000;
  const batchRows = o.batchRows ?? 500;
  const retryInitialMs = o.retryInitialMs ?? 250;
  const retryMaxMs = o.retryMaxMs ?? 5000;
  const groupId = o.groupId ?? 'turnstream-clickhouse-sink';
  const producer = new EventProducer(o.kafka, o.codecs);
  const buffer = new RowBuffer();
  const stats: Omit<SinkStats, 'commits' | 'paused' | 'topics' | 'rejoins'> = {
    consumed: 0,
    rowsInserted: 0,
    batches: 0,
    insertFailures: 0,
    deadLettered: 0,
    skipped: 0,
    buffered: 0,
    lastError: undefined,
  };
  let admin: Admin | undefined;
  let stopping = false;
  /** Flushes so far (which flush an insert belonged to, for `onInsert`). */
  let flushes = 0;
  let discoveryTimer: NodeJS.Timeout | undefined;
  let discovering: Promise<void> = Promise.resolve();
  let discoveryBusy = false;

  /** Inserts everything buffered, the tables side by side; on failure the rows not stored go back. */
  const flush = async (): Promise<void> => {
    const batch = buffer.drain();
    const flushNo = ++flushes;
    const started = performance.now();
    try {
      // ClickHouse parses each insert on a thread of its own.
      const inserts = [...batch.tables].map(async ([table, part]) => {
        if (part.rows === 0) return;
        await store.insertRowBinary(store.tables[table], buffer.columnsOf(table), part.chunks);
        // Stored: not sent again should another table of this batch fail.
        batch.tables.set(table, { chunks: [], rows: 0 });
        batch.count -= part.rows;
        stats.rowsInserted += part.rows;
        sinkMetrics.rows.inc({ table }, part.rows);
        o.onInsert?.(table, part.rows, flushNo);
      });
      const failed = (await Promise.allSettled(inserts)).find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    } catch (err) {
      buffer.restore(batch);
      stats.insertFailures++;
      sinkMetrics.failures.inc();
      stats.lastError = (err as Error).message;
      throw err;
    } finally {
      stats.buffered = buffer.size;
      sinkMetrics.buffered.set(buffer.size);
    }
    sinkMetrics.insertSeconds.observe((performance.now() - started) / 1000);
    sinkMetrics.batches.inc();
    stats.batches++;
  };

  /** Codecs of a tagged family, built (and its schemas registered) on first use. */
  const tagCodecs = new Map<string, Promise<EventCodecs>>();
  /** The same, once built. */
  const builtCodecs = new Map<string, EventCodecs>([[familyTag, o.codecs]]);
  const codecsOf = async (tag: string): Promise<EventCodecs> => {
    if (tag === familyTag) return o.codecs;
    let c = tagCodecs.get(tag);
    if (!c) {
      c = o.codecs.withNaming({ prefix, tag });
      tagCodecs.set(tag, c);
      c.then(
        (built) => void builtCodecs.set(tag, built),
        () => tagCodecs.delete(tag),
      );
    }
    try {
      return await c;
    } catch (err) {
      // The registry, not the record: retry the batch.
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `codecs of replay "${tag}" unavailable: ${(err as Error).message}`, { cause: err });
    }
  };

  const sendToDlq = async (id: ReplayTopic['id'], topic: string, partition: number, m: KafkaMessage, err: unknown): Promise<void> => {
    const e = toTurnstreamError(err);
    if (id === 'dlq') {
      // Dead-lettering a dead letter would feed it back to us: count it and move on.
      stats.skipped++;
      sinkMetrics.skipped.inc({ reason: 'bad_dead_letter' });
      log.error({ topic, partition, offset: m.offset, code: e.code, err: e.message }, 'unreadable dead letter skipped');
      return;
    }
    const dl = deadLetter({ topic, partition, offset: m.offset, key: m.key ?? null, value: m.value ?? null }, e, stage, 1);
    await producer.send('dlq', m.key?.toString('utf8') ?? '', dl);
    stats.deadLettered++;
    sinkMetrics.deadLetters.inc({ code: e.code });
    log.warn({ topic, partition, offset: m.offset, code: e.code, err: e.message }, 'record dead-lettered');
  };

  /** The row of a decoded record; a record that maps to none goes to the DLQ. */
  const map = (route: ReplayTopic, topic: string, partition: number, m: KafkaMessage, value: unknown): Promise<void> | undefined => {
    try {
      const { table, row } = toRow(route.id, value, { topic, partition, offset: m.offset, replayTag: route.tag });
      buffer.add(table, row);
      return undefined;
    } catch (err) {
      return sendToDlq(route.id, topic, partition, m, err);
    }
  };

  /** The slow path of `accept`: codecs to build or a writer schema to fetch from the registry. */
  const acceptLater = async (route: ReplayTopic, topic: string, partition: number, m: KafkaMessage & { value: Buffer }): Promise<void> => {
    let value: unknown;
    const codecs = await codecsOf(route.tag);
    try {
      value = await codecs.of(route.id).decode(m.value);
    } catch (err) {
      // The codec says which: the registry being unreachable (retriable) is not the record's
      // fault, and the flush is retried; an undecodable record goes to the DLQ.
      if (isRetriable(err)) throw err;
      return sendToDlq(route.id, topic, partition, m, err);
    }
    return map(route, topic, partition, m, value);
  };

  /**
   * Decodes and buffers one record. Returns a promise only when it must wait (a registry lookup,
   * a dead letter to send): the common record costs no await.
   */
  const accept = (route: ReplayTopic, topic: string, partition: number, m: KafkaMessage): Promise<void> | undefined => {
    stats.consumed++;
    if (!m.value) {
      // Tombstones (compacted topics) carry no event.
      stats.skipped++;
      sinkMetrics.skipped.inc({ reason: 'tombstone' });
      return undefined;
    }
    const codecs = builtCodecs.get(route.tag);
    let value: unknown;
    try {
      value = codecs?.of(route.id).decodeNow(m.value);
    } catch (err) {
      return sendToDlq(route.id, topic, partition, m, err);
    }
    if (value === undefined) return acceptLater(route, topic, partition, m as KafkaMessage & { value: Buffer });
    return map(route, topic, partition, m, value);
  };

  /** The replay topics that exist now, sorted. */
  const replayTopics = async (): Promise<string[]> =>
    admin && replay ? (await admin.listTopics()).filter((t) => !family.has(t) && replay.match(t)).sort() : [];

  /** Looks for replay topics created since the consumer joined, and follows them (a rejoin). Skipped while ClickHouse is down. */
  const discover = async (): Promise<void> => {
    if (stopping || !consumer || consumer.paused) return;
    const found = await replayTopics();
    const now = consumer.stats().topics;
    if (stopping || (!consumer.rejoining && found.every((t) => now.includes(t)))) return;
    log.info({ topics: found.filter((t) => !now.includes(t)) }, 'new replay topics; rejoining to follow them');
    // A replay's topics are its output, all new: read them whole whatever fromBeginning says.
    await consumer.rejoin([...family.keys()], found);
  };

  let consumer: FlushConsumer | undefined;
  const ready = (async () => {
    // ClickHouse may be starting: retry the migrations instead of failing the service.
    const r = await retry(() => migrate(store), {
      baseMs: retryInitialMs,
      maxMs: retryMaxMs,
      retryIf: (err) => !stopping && toTurnstreamError(err).retriable,
      onRetry: (err, attempt) => log.warn({ err: (err as Error).message, attempt }, 'ClickHouse not ready; retrying'),
    }).catch((err: unknown) => {
      throw stopping ? err : toTurnstreamError(err);
    });
    log.info({ applied: r.applied, version: r.version, server: r.server, database: store.options.database }, 'analytics schema ready');
    for (const table of new Set(ids.map((id) => TABLE_OF[id]!))) {
      buffer.setColumns(
        table,
        await retry(() => store.columns(store.tables[table]), {
          baseMs: retryInitialMs,
          maxMs: retryMaxMs,
          retryIf: (err) => !stopping && isRetriable(err),
        }),
      );
    }
    await producer.connect();
    let replayed: string[] = [];
    if (replay) {
      admin = o.kafka.admin();
      await admin.connect();
      replayed = await replayTopics();
    }
    consumer = new FlushConsumer({
      kafka: o.kafka,
      groupId,
      topics: [...family.keys()],
      topicsFromStart: replayed,
      fromBeginning: o.fromBeginning,
      sessionTimeoutMs: o.sessionTimeoutMs,
      logger: log,
      flushAt: batchRows,
      flushIntervalMs: o.flushIntervalMs,
      maxBuffered: o.maxBufferedRows,
      retryInitialMs,
      retryMaxMs,
      handle: (topic, partition, m) => {
        const route = routeOf(topic);
        if (route) return accept(route, topic, partition, m);
        stats.skipped++;
        sinkMetrics.skipped.inc({ reason: 'unknown_topic' });
        return undefined;
      },
      buffered: () => buffer.size,
      flush,
      onPaused: (paused) => sinkMetrics.paused.set(paused ? 1 : 0),
    });
    if (stopping) return;
    await consumer.start();
    if (replay && discoveryMs > 0 && !stopping)
      discoveryTimer = setInterval(() => {
        if (discoveryBusy) return;
        discoveryBusy = true;
        discovering = discover()
          .catch((err) => log.warn({ err: (err as Error).message }, 'replay topic discovery failed'))
          .finally(() => void (discoveryBusy = false));
      }, discoveryMs);
    log.info({ groupId, topics: consumer.stats().topics }, 'clickhouse sink running');
  })();
  ready.catch(() => undefined);

  return {
    ready,
    store,
    stats: () => ({
      ...stats,
      buffered: buffer.size,
      ...(consumer?.stats() ?? { commits: 0, paused: false, topics: [], rejoins: 0 }),
    }),
    async stop() {
      stopping = true;
      if (discoveryTimer) clearInterval(discoveryTimer);
      await ready.catch(() => undefined);
      if (discoveryTimer) clearInterval(discoveryTimer);
      await discovering.catch(() => undefined);
      // What is buffered is stored once more; what is not stored is not committed, and is read again by the next instance.
      await consumer?.stop();
      await producer.disconnect().catch(() => undefined);
      await admin?.disconnect().catch(() => undefined);
      await store.close();
    },
  };
}
