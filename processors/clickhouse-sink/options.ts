import type { Kafka } from 'kafkajs';
import type { AnalyticsOptions, TableId } from '../../warehouse/index.ts';
import type { TopicId } from '../../schemas/index.ts';
import type { EventCodecs } from '../../streams/index.ts';
import type { Logger } from '../../core/index.ts';
import { SINK_DEFAULTS } from '../defaults.ts';

export { SINK_DEFAULTS };

/** Topics the sink stores by default: every topic but the assembler's changelog. */
export const SINK_TOPICS: readonly TopicId[] = ['turns', 'feedback', 'pairs', 'judgements', 'samples', 'weights', 'dlq', 'rewards'];

export interface ClickhouseSinkOptions {
  kafka: Kafka;
  /** Codecs of the topic family to read (prefix and tag included). */
  codecs: EventCodecs;
  /** Where the rows go. */
  analytics: AnalyticsOptions;
  /**
   * Consumer group; more instances with the same group share the partitions. `SINK_GROUP_ID`
   * @default `<prefix of the topic family>` + SINK_DEFAULTS.groupSuffix ('turnstream-clickhouse-sink')
   */
  groupId?: string;
  /** Which topics. @default SINK_TOPICS (all but session-state) */
  topics?: readonly TopicId[];
  /**
   * Replays to store too: the tagged topics of each tag (`<prefix>turnstream.replay.<tag>.*`,
   * those of `topics` a replay re-derives: pairs, judgements, samples, dlq), or `'all'` for
   * every tag. Rows carry the tag in `replay_tag`; live queries leave them out. Tagged topics
   * are always read from their beginning (a replay's whole output is new).
   * `SINK_REPLAY_TAGS` @default SINK_DEFAULTS.replayTags ('all'; [] = the live topics only)
   */
  replayTags?: readonly string[] | 'all';
  /**
   * With `replayTags`: how often to look for tagged topics created since the consumer joined
   * (a replay started later), in ms. A new topic makes the sink flush, commit and rejoin with
   * it (kafkajs resolves a subscription once, when the consumer joins). 0 = never look again.
   * `SINK_REPLAY_DISCOVERY_MS` @default SINK_DEFAULTS.replayDiscoveryMs (10000)
   */
  replayDiscoveryMs?: number;
  /**
   * A flush starts once this many rows are buffered (or `flushIntervalMs` passed). A flush inserts
   * everything buffered, one insert per table, so an insert can hold more rows than this: while
   * catching up with a backlog, a whole fetch (thousands of records) is buffered at once. It also
   * sets the default of `maxBufferedRows`. `SINK_BATCH_ROWS` @default SINK_DEFAULTS.batchRows (500)
   */
  batchRows?: number;
  /** …or when the oldest buffered row is this old, in ms. `SINK_FLUSH_MS` @default SINK_DEFAULTS.flushIntervalMs (500) */
  flushIntervalMs?: number;
  /**
   * Called after each insert that succeeded, with its table, its row count and the number of
   * the flush it was part of (a flush inserts its tables side by side). For benchmarks.
   */
  onInsert?: (table: TableId, rows: number, flush: number) => void;
  /** Fetching waits for inserts while this many rows wait, and pauses while ClickHouse is down. `SINK_MAX_BUFFERED_ROWS` @default SINK_DEFAULTS.bufferedBatches (100) × batchRows */
  maxBufferedRows?: number;
  /** First retry delay after a failed insert, doubled up to `retryMaxMs`. @default SINK_DEFAULTS.retryInitialMs (250) */
  retryInitialMs?: number;
  /** @default SINK_DEFAULTS.retryMaxMs (5000) */
  retryMaxMs?: number;
  /** A new group starts from the beginning of each topic. @default true */
  fromBeginning?: boolean;
  /** @default 30000 */
  sessionTimeoutMs?: number;
  /** Stage name in dead letters and metrics. @default SINK_DEFAULTS.stage ('clickhouse-sink') */
  stage?: string;
  /** @default a pino logger named after the stage */
  logger?: Logger;
}
