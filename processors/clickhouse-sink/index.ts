/** The ClickHouse sink: every topic into the analytics tables. */
export { startClickhouseSink, type ClickhouseSinkHandle, type SinkStats } from './sink.ts';
export { SINK_TOPICS, type ClickhouseSinkOptions } from './options.ts';
export { sinkMetrics } from './metrics.ts';
