/** The sink's Prometheus metrics (the shared registry of core/metrics.ts). */
import { counter, gauge, histogram } from '../../core/index.ts';

export const sinkMetrics = {
  rows: counter('turnstream_sink_rows_inserted_total', 'Rows inserted into ClickHouse', ['table']),
  batches: counter('turnstream_sink_batches_total', 'Insert batches that succeeded'),
  insertSeconds: histogram(
    'turnstream_sink_insert_seconds',
    'Duration of one batch insert (all tables)',
    [],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  ),
  failures: counter('turnstream_sink_insert_failures_total', 'Failed insert attempts (retried with backoff)'),
  deadLetters: counter('turnstream_sink_dead_letters_total', 'Records the sink could not map, sent to the DLQ', ['code']),
  skipped: counter('turnstream_sink_skipped_total', 'Records skipped without a row or a dead letter', ['reason']),
  buffered: gauge('turnstream_sink_buffered_rows', 'Rows waiting for ClickHouse'),
  paused: gauge('turnstream_sink_paused', '1 while fetching is paused because ClickHouse is down or behind'),
};
