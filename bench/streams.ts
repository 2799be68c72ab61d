// The transactional streams runtime against plain kafkajs, on the same broker and the same
// ~1 KB Avro Turn records, in one run:
//   turnstream bench streams [--json] [--records 20000] [--partitions 3]
//
// - raw_produce_msgs_per_s: an idempotent kafkajs producer (acks=all), batches of 500.
// - raw_consume_msgs_per_s: a kafkajs consumer group reading them from the beginning.
// - raw_passthrough_msgs_per_s: kafkajs consume → produce (acks=all), at-least-once.
// - runtime_passthrough_msgs_per_s: `runProcessor` reading the records (Avro-decoded), handing
//   each to a handler that emits it again (Avro-encoded) to another topic, exactly once:
//   outputs and offsets in one transaction, read back with read_committed.
// - ratio: runtime ÷ raw passthrough.
import type { BenchArgs } from './options.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { benchFamily, rawConsume, rawPassthrough, rawProduce, type BenchFamily } from './support.ts';
import { runtimePassthrough, turnRecords } from './runtime-passthrough.ts';

export const description =
  'the transactional streams runtime (exactly once) against plain kafkajs consume → produce, on the same ~1 KB Avro records';

export const options: BenchOptions = {
  records: { default: '20000', min: 100, help: 'Turn records of ~1 KB' },
  partitions: { default: '3', help: 'partitions of the topics' },
  'max-transaction-records': { default: '4000', min: 1, help: "the runtime's bound on input records per transaction" },
};

export interface StreamsBenchResult extends BenchResult {
  records: number;
  mean_record_bytes: number;
  partitions: number;
  raw_produce_msgs_per_s: number;
  raw_consume_msgs_per_s: number;
  raw_passthrough_msgs_per_s: number;
  runtime_passthrough_msgs_per_s: number;
  runtime_transactions: number;
  /** Input records of the runtime's largest transaction (bounded by maxTransactionRecords). */
  runtime_largest_transaction: number;
  /** The longest the runtime's output stood still (read_committed) once it began: output latency under a backlog. */
  runtime_max_output_gap_ms: number;
  /** The same with a batch handler (`handleBatch`: each fetched batch in one call). */
  runtime_batch_passthrough_msgs_per_s: number;
  runtime_batch_transactions: number;
  runtime_batch_max_output_gap_ms: number;
  /** runtime_passthrough_msgs_per_s / raw_passthrough_msgs_per_s */
  ratio: number;
  /** runtime_batch_passthrough_msgs_per_s / raw_passthrough_msgs_per_s */
  ratio_batch: number;
}

export async function run(args: BenchArgs): Promise<StreamsBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const n = Number(o.records);
  const partitions = Number(o.partitions);
  const family = await benchFamily(config, 'streams', partitions, ['turns', 'dlq']);
  try {
    return await measure(family, n, partitions, progress, Number(o['max-transaction-records']));
  } finally {
    await family.cleanup();
  }
}

async function measure(
  family: BenchFamily,
  n: number,
  partitions: number,
  progress: (l: string) => void,
  maxTransactionRecords: number,
): Promise<StreamsBenchResult> {
  const { prefix, kafka, codecs } = family;
  const data = await turnRecords(codecs, n);
  const meanBytes = data.reduce((s, r) => s + r.value.length, 0) / n;

  progress(`raw produce: ${n} records of ~${Math.round(meanBytes)} B to ${codecs.topic('turns')}`);
  const produceSeconds = await rawProduce(kafka, codecs.topic('turns'), data);
  progress('raw consume');
  const consumeSeconds = await rawConsume(kafka, codecs.topic('turns'), n, `${prefix}bench-raw-consume`);
  progress('raw consume → produce');
  const rawSeconds = await rawPassthrough(
    kafka,
    codecs.topic('turns'),
    `${prefix}bench-raw-out`,
    n,
    `${prefix}bench-raw-passthrough`,
    partitions,
  );

  progress('runtime passthrough (transactional, read back read_committed)');
  const runtime = await runtimePassthrough(family, n, partitions, `${prefix}bench-runtime-out`, `${prefix}bench-runtime`, progress, {
    maxTransactionRecords,
  });
  progress('runtime passthrough with a batch handler');
  const batched = await runtimePassthrough(family, n, partitions, `${prefix}bench-batch-out`, `${prefix}bench-batch`, progress, {
    maxTransactionRecords,
    batch: true,
  });
  const runtimeSeconds = runtime.seconds;
  const runtimeRate = n / runtimeSeconds;
  const rawRate = n / rawSeconds;
  return {
    records: n,
    mean_record_bytes: Math.round(meanBytes),
    partitions,
    raw_produce_msgs_per_s: Math.round(n / produceSeconds),
    raw_consume_msgs_per_s: Math.round(n / consumeSeconds),
    raw_passthrough_msgs_per_s: Math.round(rawRate),
    runtime_passthrough_msgs_per_s: Math.round(runtimeRate),
    runtime_transactions: runtime.committedTransactions,
    runtime_largest_transaction: runtime.largestTransaction,
    runtime_max_output_gap_ms: runtime.maxOutputGapMs,
    runtime_batch_passthrough_msgs_per_s: Math.round(n / batched.seconds),
    runtime_batch_transactions: batched.committedTransactions,
    runtime_batch_max_output_gap_ms: batched.maxOutputGapMs,
    baseline: 'plain kafkajs consume → produce (acks=all, at-least-once) of the same records',
    ratio: Number((runtimeRate / rawRate).toFixed(4)),
    ratio_batch: Number((n / batched.seconds / rawRate).toFixed(4)),
  };
}
