/**
 * Every topic → ClickHouse. A plain consumer group (read_committed, manual commits) decodes
 * each record, maps it to a row (analytics/rows.ts) and buffers it; a batch is inserted
 * when it reaches `batchRows` or `flushIntervalMs`, and only then are its offsets
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
import type { Admin, Consumer, EachBatchPayload, KafkaMessage } from 'kafkajs';
import { AnalyticsStore, migrate, toRow, TABLE_OF } from '../../analytics/index.ts';
import {
  createLogger,
  deadLetter,
  ErrorCodes,
  EventProducer,
  retry,
  toTurnstreamError,
  TurnstreamError,
  type EventCodecs,
} from '../../streams/index.ts';
import { backoffMs } from './backoff.ts';
import { sinkMetrics } from './metrics.ts';
import { SINK_TOPICS, type ClickhouseSinkOptions } from './options.ts';
import { isDerived, ReplayTopics, type ReplayTopic } from './replay-topics.ts';
import { RowBuffer, splitPartitionKey, type Drained } from './row-buffer.ts';

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
  /** Fetching is paused (ClickHouse down or the buffer full). */
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

/** Errors on the way to the registry that should be retried, not dead-lettered. */
function isTransient(err: unknown): boolean {
  for (let e: unknown = err, i = 0; e && i < 6; e = (e as { cause?: unknown }).cause, i++) {
    const text = `${(e as Error).message ?? ''} ${(e as { code?: string }).code ?? ''}`;
    if (/ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|socket hang up|fetch failed|timeout/i.test(text)) return true;
  }
  return false;
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
  const flushIntervalMs = o.flushIntervalMs ?? 500;
  const maxBuffered = o.maxBufferedRows ?? 20 * batchRows;
  const retryInitialMs = o.retryInitialMs ?? 250;
  const retryMaxMs = o.retryMaxMs ?? 5000;
  const groupId = o.groupId ?? 'turnstream-clickhouse-sink';

  const newConsumer = (): Consumer =>
    o.kafka.consumer({
      groupId,
      readUncommitted: false,
      maxWaitTimeInMs: 100,
      sessionTimeout: o.sessionTimeoutMs ?? 30000,
      heartbeatInterval: 3000,
    });
  let consumer: Consumer | undefined;
  /** What `consumer` is subscribed to. */
  let topics: string[] = [...family.keys()];
  let admin: Admin | undefined;
  const producer = new EventProducer(o.kafka, o.codecs);
  const buffer = new RowBuffer();
  const stats: SinkStats = {
    consumed: 0,
    rowsInserted: 0,
    batches: 0,
    insertFailures: 0,
    deadLettered: 0,
    skipped: 0,
    buffered: 0,
    paused: false,
    commits: 0,
    lastError: undefined,
    topics: [],
    rejoins: 0,
  };

  let stopping = false;
  /** Flush attempts so far (which flush an insert belonged to, for `onInsert`). */
  let flushes = 0;
  let failedAttempts = 0;
  let retryAt = 0;
  let flushChain: Promise<void> = Promise.resolve();
  let ticker: NodeJS.Timeout | undefined;
  let discoveryTimer: NodeJS.Timeout | undefined;
  let discovering: Promise<void> = Promise.resolve();
  let discoveryBusy = false;
  /** The old consumer left the group and a new one has yet to join. */
  let rejoinPending = false;
  const pausedBy = new Set<'clickhouse' | 'buffer'>();

  const setPaused = (reason: 'clickhouse' | 'buffer', on: boolean): void => {
    const was = pausedBy.size > 0;
    if (on) pausedBy.add(reason);
    else pausedBy.delete(reason);
    const now = pausedBy.size > 0;
    if (was === now) return;
    const list = topics.map((topic) => ({ topic }));
    if (now) consumer?.pause(list);
    else consumer?.resume(list);
    stats.paused = now;
    sinkMetrics.paused.set(now ? 1 : 0);
    log.info({ reason, paused: now }, now ? 'fetching paused' : 'fetching resumed');
  };

  const commit = async (offsets: Drained['offsets']): Promise<void> => {
    if (offsets.size === 0) return;
    const list = [...offsets].map(([key, next]) => ({ ...splitPartitionKey(key), offset: next.toString() }));
    try {
      if (!consumer) throw new Error('no consumer');
      await consumer.commitOffsets(list);
      stats.commits += list.length;
    } catch (err) {
      // The rows are stored; a failed commit (rebalance in progress) only means these
      // records are delivered again, and their rows collapse by id.
      log.warn({ err: (err as Error).message }, 'offset commit failed; records will be re-delivered and deduplicated');
    }
  };

  /** One insert attempt of everything buffered; on failure the rows go back and fetching pauses. */
  const flushOnce = async (): Promise<void> => {
    if (!buffer.pending) return;
    const batch = buffer.drain();
    const flushNo = ++flushes;
    const started = performance.now();
    try {
      // The tables side by side: ClickHouse parses each insert on a thread of its own.
      const inserts = [...batch.rows].map(async ([table, rows]) => {
        if (rows.length === 0) return;
        await store.insert(store.tables[table], rows);
        // Stored: not sent again should another table of this batch fail.
        batch.rows.set(table, []);
        batch.count -= rows.length;
        stats.rowsInserted += rows.length;
        sinkMetrics.rows.inc({ table }, rows.length);
        o.onInsert?.(table, rows.length, flushNo);
      });
      const failed = (await Promise.allSettled(inserts)).find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    } catch (err) {
      buffer.restore(batch);
      failedAttempts++;
      stats.insertFailures++;
      sinkMetrics.failures.inc();
      const delay = backoffMs(failedAttempts, retryInitialMs, retryMaxMs);
      retryAt = Date.now() + delay;
      stats.lastError = (err as Error).message;
      setPaused('clickhouse', true);
      log.warn(
        { err: stats.lastError, attempt: failedAttempts, retryInMs: delay, buffered: buffer.size },
        'insert failed; retrying with backoff',
      );
      return;
    } finally {
      stats.buffered = buffer.size;
      sinkMetrics.buffered.set(buffer.size);
    }
    sinkMetrics.insertSeconds.observe((performance.now() - started) / 1000);
    sinkMetrics.batches.inc();
    stats.batches++;
    if (failedAttempts > 0) log.info({ afterAttempts: failedAttempts }, 'ClickHouse reachable again');
    failedAttempts = 0;
    retryAt = 0;
    await commit(batch.offsets);
    setPaused('clickhouse', false);
    if (buffer.size < maxBuffered) setPaused('buffer', false);
  };

  /** Serialized: one flush at a time, in order. */
  let queued = 0;
  const flush = (): Promise<void> => {
    queued++;
    flushChain = flushChain.then(flushOnce, flushOnce).finally(() => void queued--);
    return flushChain;
  };

  /** Starts a flush when one is due and none is queued; decoding goes on meanwhile. */
  const maybeFlush = (): void => {
    if (queued > 0 || !buffer.pending || Date.now() < retryAt) return;
    if (buffer.size >= batchRows || buffer.age() >= flushIntervalMs || failedAttempts > 0) void flush();
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
      // The registry being unreachable is not the record's fault: retry the batch.
      if (isTransient(err))
        throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `decode failed transiently: ${(err as Error).message}`, { cause: err });
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

  const eachBatch = async ({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> => {
    const route = routeOf(batch.topic);
    for (const m of batch.messages) {
      if (!isRunning() || isStale()) return;
      if (route) {
        const waiting = accept(route, batch.topic, batch.partition, m);
        if (waiting) await waiting;
      } else {
        stats.skipped++;
        sinkMetrics.skipped.inc({ reason: 'unknown_topic' });
      }
      // Resolved = fetched past; committed only once its row is stored (flushOnce).
      buffer.cover(batch.topic, batch.partition, m.offset);
      resolveOffset(m.offset);
    }
    stats.buffered = buffer.size;
    sinkMetrics.buffered.set(buffer.size);
    await heartbeat();
    // Backpressure: past maxBuffered, fetching pauses until a flush catches up.
    if (buffer.size >= maxBuffered) setPaused('buffer', true);
    maybeFlush();
  };

  /** The replay topics that exist now, sorted. */
  const replayTopics = async (): Promise<string[]> =>
    admin && replay ? (await admin.listTopics()).filter((t) => !family.has(t) && replay.match(t)).sort() : [];

  /** Connects a consumer subscribed to `list` and resolves once it has joined the group. */
  const join = async (list: string[]): Promise<void> => {
    const c = newConsumer();
    consumer = c;
    topics = list;
    stats.topics = [...list];
    const joined = new Promise<void>((resolve) => {
      c.on(c.events.GROUP_JOIN, () => resolve());
    });
    await c.connect();
    const live = list.filter((t) => family.has(t));
    const tagged = list.filter((t) => !family.has(t));
    if (live.length > 0) await c.subscribe({ topics: live, fromBeginning: o.fromBeginning ?? true });
    // A replay's topics are its output, all new: read them whole whatever fromBeginning says.
    if (tagged.length > 0) await c.subscribe({ topics: tagged, fromBeginning: true });
    await c.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
    if (pausedBy.size > 0) c.pause(list.map((topic) => ({ topic })));
    await joined;
  };

  /**
   * Looks for replay topics created since the consumer joined. kafkajs fixes a subscription
   * when the consumer joins, so a new topic means: stop fetching, store and commit what is
   * buffered, leave, and join again with it. Records fetched meanwhile are re-delivered at
   * worst, and collapse by key. Skipped while ClickHouse is down (the flush would fail).
   */
  const discover = async (): Promise<void> => {
    if (stopping || !consumer || pausedBy.size > 0) return;
    const found = await replayTopics();
    const fresh = found.filter((t) => !topics.includes(t));
    if ((fresh.length === 0 && !rejoinPending) || stopping) return;
    if (!rejoinPending) {
      log.info({ topics: fresh }, 'new replay topics; rejoining to follow them');
      const old = consumer;
      old.pause(topics.map((topic) => ({ topic })));
      await flushChain.catch(() => undefined);
      retryAt = 0;
      await flush();
      if (pausedBy.size > 0) return; // the flush failed: fetching stays paused until ClickHouse is back
      rejoinPending = true;
      await old.disconnect().catch((err) => log.warn({ err: (err as Error).message }, 'consumer disconnect failed'));
    }
    if (stopping) return;
    try {
      await join([...family.keys(), ...found]);
    } catch (err) {
      // Kafka unreachable: the next look tries again (nothing is fetched meanwhile).
      await consumer?.disconnect().catch(() => undefined);
      throw err;
    }
    rejoinPending = false;
    stats.rejoins++;
  };

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
    await producer.connect();
    if (replay) {
      admin = o.kafka.admin();
      await admin.connect();
      topics = [...family.keys(), ...(await replayTopics())];
    }
    await join(topics);
    ticker = setInterval(maybeFlush, Math.max(10, Math.min(100, Math.floor(flushIntervalMs / 4))));
    if (replay && discoveryMs > 0 && !stopping)
      discoveryTimer = setInterval(() => {
        if (discoveryBusy) return;
        discoveryBusy = true;
        discovering = discover()
          .catch((err) => log.warn({ err: (err as Error).message }, 'replay topic discovery failed'))
          .finally(() => void (discoveryBusy = false));
      }, discoveryMs);
    log.info({ groupId, topics }, 'clickhouse sink running');
  })();
  ready.catch(() => undefined);

  return {
    ready,
    store,
    stats: () => ({ ...stats, buffered: buffer.size, topics: [...stats.topics] }),
    async stop() {
      stopping = true;
      if (discoveryTimer) clearInterval(discoveryTimer);
      await ready.catch(() => undefined);
      if (discoveryTimer) clearInterval(discoveryTimer);
      await discovering.catch(() => undefined);
      if (ticker) clearInterval(ticker);
      // Stop fetching, then store what is buffered (one attempt: what is not stored is
      // not committed, so it is read again by the next instance).
      try {
        consumer?.pause(topics.map((topic) => ({ topic })));
      } catch {
        // never ran (start failed): nothing is fetched
      }
      await flushChain.catch(() => undefined);
      retryAt = 0;
      await flush();
      await consumer?.disconnect().catch((err) => log.warn({ err: (err as Error).message }, 'consumer disconnect failed'));
      await producer.disconnect().catch(() => undefined);
      await admin?.disconnect().catch(() => undefined);
      await store.close();
    },
  };
}
