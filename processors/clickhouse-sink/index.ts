/** The ClickHouse sink: every topic into the analytics tables. */
export { startClickhouseSink, type ClickhouseSinkHandle } from './sink.ts';
export type { SinkStats } from './sink-stats.ts';
export { SINK_TOPICS, type ClickhouseSinkOptions } from './options.ts';
export { sinkMetrics } from './metrics.ts';
