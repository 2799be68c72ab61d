/**
 * `turnstream bench kstreams` as a user runs it, at toy size on the real stack: the Kafka Streams
 * peer is built with Maven (or reused), runs in its JVM next to the runtime passthrough and raw
 * kafkajs, and the command prints one JSON object with every figure it promises. Kafka Streams
 * passes every record through exactly once. (No timing is asserted: figures are measured, not
 * tested.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';

const exec = promisify(execFile);

let env: NodeJS.ProcessEnv;
before(async () => {
  const stack = await ensureStack();
  env = {
    ...process.env,
    KAFKA_BROKERS: stack.brokers,
    SCHEMA_REGISTRY_URL: stack.registryUrl,
    CLICKHOUSE_URL: stack.clickhouseUrl,
    TURNSTREAM_TOPIC_PREFIX: uniquePrefix('kstreams'),
  };
});

const positive = (x: unknown) => typeof x === 'number' && Number.isFinite(x) && x > 0;

test(
  'bench kstreams: Kafka Streams, the runtime and raw kafkajs side by side, exactly N records through Kafka Streams',
  { timeout: 600_000 },
  async () => {
    const records = 2000;
    // A first build downloads kafka-streams and avro with Maven: minutes, once.
    const { stdout } = await exec(
      process.execPath,
      ['bin/turnstream.js', 'bench', 'kstreams', '--json', '--records', String(records), '--pairs', '1', '--warmups', '1'],
      {
        cwd: REPO_ROOT,
        env,
        maxBuffer: 16 << 20,
        timeout: 540_000,
      },
    );
    const lines = stdout.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, `one JSON object on stdout, got:\n${stdout.slice(0, 2000)}`);
    const r = JSON.parse(lines[0]) as Record<string, unknown> & {
      runs: Array<Record<string, number>>;
    };

    assert.equal(r.records, records);
    assert.equal(r.pairs, 1);
    assert.equal(r.partitions, 3);
    assert.match(String(r.kafka_streams_version), /^4\.\d+\.\d+/);
    assert.ok(Number(r.mean_record_bytes) >= 900 && Number(r.mean_record_bytes) <= 1200, `~1 KB records, got ${r.mean_record_bytes}`);
    for (const k of [
      'kstreams_msgs_per_s',
      'runtime_passthrough_msgs_per_s',
      'runtime_batch_passthrough_msgs_per_s',
      'raw_passthrough_msgs_per_s',
      'ratio',
      'ratio_raw',
      'ratio_batch',
      'ratio_batch_raw',
    ]) {
      assert.ok(positive(r[k]), `${k} = ${String(r[k])}`);
    }
    assert.equal(r.warmups, 1);
    assert.ok(
      Array.isArray(r.kstreams_warmup_msgs_per_s) && r.kstreams_warmup_msgs_per_s.length === 1 && positive(r.kstreams_warmup_msgs_per_s[0]),
    );
    assert.ok(typeof r.baseline === 'string' && r.baseline.includes('Kafka Streams'));

    assert.equal(r.runs.length, 1);
    const [run] = r.runs;
    assert.equal(run.kstreams_records, records, 'Kafka Streams wrote every record once, read back read_committed');
    for (const k of ['kstreams_msgs_per_s', 'runtime_msgs_per_s', 'runtime_batch_msgs_per_s', 'raw_msgs_per_s'])
      assert.ok(positive(run[k]), `runs[0].${k} = ${run[k]}`);
    // One pair: the medians are that pair's figures, and the ratios are of them (to within rounding).
    assert.equal(r.kstreams_msgs_per_s, run.kstreams_msgs_per_s);
    assert.ok(Math.abs(Number(r.ratio) - run.runtime_msgs_per_s / run.kstreams_msgs_per_s) < 0.01);
    assert.ok(Math.abs(Number(r.ratio_raw) - run.runtime_msgs_per_s / run.raw_msgs_per_s) < 0.01);
    assert.ok(Math.abs(Number(r.ratio_batch) - run.runtime_batch_msgs_per_s / run.kstreams_msgs_per_s) < 0.01);
    assert.ok(Math.abs(Number(r.ratio_batch_raw) - run.runtime_batch_msgs_per_s / run.raw_msgs_per_s) < 0.01);
  },
);
