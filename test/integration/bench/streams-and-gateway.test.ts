/**
 * `turnstream bench streams` and `bench gateway` at toy sizes: they run end to end on the real
 * stack and report every figure they promise, and what they pass through is exact (no timing
 * is asserted: figures are measured, not tested).
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { run as runGateway } from '../../../bench/gateway.ts';
import { run as runStreams } from '../../../bench/streams.ts';
import { loadConfig } from '../../../cli/config.ts';
import { ensureStack, REPO_ROOT } from '../../support/stack.ts';

let config: ReturnType<typeof loadConfig>;
before(async () => {
  const stack = await ensureStack();
  config = loadConfig(
    { KAFKA_BROKERS: stack.brokers, SCHEMA_REGISTRY_URL: stack.registryUrl, CLICKHOUSE_URL: stack.clickhouseUrl },
    REPO_ROOT,
  );
});

const positive = (x: unknown) => typeof x === 'number' && Number.isFinite(x) && x > 0;

test('bench streams: raw produce, consume and passthrough, the runtime passthrough per record and per batch (exactly N out each) and their ratios', async () => {
  const r = await runStreams({ config, options: { records: '300' }, progress: () => {} });
  assert.equal(r.records, 300);
  assert.ok(r.mean_record_bytes >= 900 && r.mean_record_bytes <= 1200, `~1 KB records, got ${r.mean_record_bytes}`);
  for (const k of [
    'raw_produce_msgs_per_s',
    'raw_consume_msgs_per_s',
    'raw_passthrough_msgs_per_s',
    'runtime_passthrough_msgs_per_s',
    'runtime_batch_passthrough_msgs_per_s',
    'ratio',
    'ratio_batch',
  ] as const) {
    assert.ok(positive(r[k]), `${k} = ${r[k]}`);
  }
  assert.ok(r.runtime_transactions >= 1 && r.runtime_batch_transactions >= 1);
  assert.ok(r.runtime_largest_transaction >= 1 && r.runtime_largest_transaction <= 4000, `largest ${r.runtime_largest_transaction}`);
  assert.ok(r.runtime_max_output_gap_ms >= 0);
  // The ratio is of the unrounded rates; the rounded ones give it to within rounding.
  assert.ok(Math.abs(r.ratio - r.runtime_passthrough_msgs_per_s / r.raw_passthrough_msgs_per_s) < 0.01);
});

test('bench gateway: capture on and off side by side; every call made with capture on is one Turn on the topic', async () => {
  const r = await runGateway({ config, options: { clients: '2', seconds: '1', rounds: '1', 'max-tokens': '4' }, progress: () => {} });
  assert.equal(r.failed_requests, 0);
  assert.ok(r.capture_on.requests > 0 && r.capture_off.requests > 0);
  for (const m of [r.capture_on, r.capture_off]) {
    assert.ok(positive(m.req_per_s));
    assert.ok(m.latency_ms.p50 > 0 && m.latency_ms.p99 >= m.latency_ms.p50);
  }
  assert.ok(positive(r.ratio) && positive(r.tokens_per_s));
  assert.equal(r.turns_on_topic, r.calls_with_capture);
});
