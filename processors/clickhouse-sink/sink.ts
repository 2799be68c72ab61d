/**
 * Every topic → ClickHouse: a handler (sink-handler.ts) on the "flush, then commit" consumer
 * (streams/flush-consumer.ts). Each record is decoded, mapped to a row and encoded as RowBinary
 * (warehouse/); a batch is inserted when it reaches `batchRows` or `flushIntervalMs`, and
 * only then are its offsets committed. A failed insert pauses fetching and retries with backoff
 * until ClickHouse is back, so nothing is lost and the process does not crash. Tables are
 * ReplacingMergeTrees keyed by event id: a record delivered twice (crash before commit,
 * rebalance, offset reset) collapses into one row.
 *
 * With `replayTags` it also follows the tagged topics of replays (replay-discovery.ts: matched
 * against the cluster's topics when it joins, and looked for again every `replayDiscoveryMs`; a
 * new one makes it flush, commit and rejoin). Each row carries its topic's tag (`replay_tag`,
 * part of the row's key), so a replayed pair never replaces the live pair of the same id.
 *
 * A record that cannot be decoded or mapped goes to the DLQ with its reason; a record of
 * the DLQ itself that fails is counted and skipped (dead-lettering it would loop). The counts
 * behind `stats()` and the Prometheus metrics move together (sink-stats.ts).
 */
import { AnalyticsStore, TABLE_OF } from '../../warehouse/index.ts';
import { EventProducer, FlushConsumer } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { SINK_DEFAULTS, SINK_TOPICS, type ClickhouseSinkOptions } from './options.ts';
import { prepareStore } from './prepare-store.ts';
import { ReplayDiscovery } from './replay-discovery.ts';
import { RowBuffer } from './row-buffer.ts';
import { SinkDeadLetters } from './sink-dead-letters.ts';
import { SinkHandler } from './sink-handler.ts';
import { SinkRoutes } from './sink-routes.ts';
import { SinkCounters, type SinkStats } from './sink-stats.ts';
import { TagCodecs } from './tag-codecs.ts';

export interface ClickhouseSinkHandle {
  /** Resolves once the tables exist and the consumer has joined its group. */
  ready: Promise<void>;
  /** Flushes what it can, commits, leaves the group. */
  stop(): Promise<void>;
  stats(): SinkStats;
  store: AnalyticsStore;
}

export function startClickhouseSink(o: ClickhouseSinkOptions): ClickhouseSinkHandle {
  const stage = o.stage ?? SINK_DEFAULTS.stage;
  const log = o.logger ?? createLogger(stage);
  const store = new AnalyticsStore(o.analytics);
  const ids = (o.topics ?? SINK_TOPICS).filter((id) => TABLE_OF[id] !== undefined);
  const routes = new SinkRoutes(o.codecs, ids, o.replayTags ?? SINK_DEFAULTS.replayTags);
  const retryInitialMs = o.retryInitialMs ?? SINK_DEFAULTS.retryInitialMs;
  const retryMaxMs = o.retryMaxMs ?? SINK_DEFAULTS.retryMaxMs;
  const groupId = o.groupId ?? `${o.codecs.naming.prefix ?? ''}${SINK_DEFAULTS.groupSuffix}`;
  const producer = new EventProducer(o.kafka, o.codecs);
  const buffer = new RowBuffer();
  const counters = new SinkCounters();
  const deadLetters = new SinkDeadLetters(producer, stage, counters, log);
  const handler = new SinkHandler({ store, buffer, routes, codecs: new TagCodecs(o.codecs), deadLetters, counters, onInsert: o.onInsert });
  const discovery = routes.replay
    ? new ReplayDiscovery({ kafka: o.kafka, routes, intervalMs: o.replayDiscoveryMs ?? SINK_DEFAULTS.replayDiscoveryMs, logger: log })
    : undefined;
  let stopping = false;
  let consumer: FlushConsumer | undefined;

  const ready = (async () => {
    await prepareStore(store, buffer, { ids, baseMs: retryInitialMs, maxMs: retryMaxMs, stopping: () => stopping, logger: log });
    await producer.connect();
    const replayed = (await discovery?.open()) ?? [];
    consumer = new FlushConsumer({
      kafka: o.kafka,
      groupId,
      topics: routes.familyTopics,
      topicsFromStart: replayed,
      fromBeginning: o.fromBeginning,
      sessionTimeoutMs: o.sessionTimeoutMs,
      logger: log,
      flushAt: o.batchRows ?? SINK_DEFAULTS.batchRows,
      flushIntervalMs: o.flushIntervalMs ?? SINK_DEFAULTS.flushIntervalMs,
      maxBuffered: o.maxBufferedRows ?? SINK_DEFAULTS.bufferedBatches * (o.batchRows ?? SINK_DEFAULTS.batchRows),
      retryInitialMs,
      retryMaxMs,
      handle: (topic, partition, m) => handler.handle(topic, partition, m),
      buffered: () => handler.buffered(),
      flush: () => handler.flush(),
      onPaused: (paused) => counters.paused(paused),
    });
    if (stopping) return;
    await consumer.start();
    if (!stopping) discovery?.start(consumer);
    log.info({ groupId, topics: consumer.stats().topics }, 'clickhouse sink running');
  })();
  ready.catch(() => undefined);

  return {
    ready,
    store,
    stats: () => ({
      ...counters.counts,
      buffered: buffer.size,
      ...(consumer?.stats() ?? { commits: 0, paused: false, topics: [], rejoins: 0 }),
    }),
    async stop() {
      stopping = true;
      discovery?.halt();
      await ready.catch(() => undefined);
      await discovery?.settled();
      // What is buffered is stored once more; what is not stored is not committed, and is read again by the next instance.
      await consumer?.stop();
      await producer.disconnect().catch(() => undefined);
      await discovery?.close();
      await store.close();
    },
  };
}
