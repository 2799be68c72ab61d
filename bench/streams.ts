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
import type { BenchArgs } from '../cli/commands/bench.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import type { TopicId, Turn } from '../schemas/index.ts';
import { createLogger, runProcessor, type EventCodecs } from '../streams/index.ts';
import { benchFamily, createPlainTopic, rawConsume, rawPassthrough, rawProduce, sleep, type BenchFamily } from './support.ts';
import { syntheticTurn } from './pipeline-traffic.ts';

export const description =
  'the transactional streams runtime (exactly once) against plain kafkajs consume → produce, on the same ~1 KB Avro records';

export const options: BenchOptions = {
  records: { default: '20000', min: 100, help: 'Turn records of ~1 KB' },
  partitions: { default: '3', help: 'partitions of the topics' },
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
  /** runtime_passthrough_msgs_per_s / raw_passthrough_msgs_per_s */
  ratio: number;
}

const TARGET_BYTES = 1024;

/** `n` Turn records of about 1 KB each, over 500 keys. */
async function records(codecs: EventCodecs, n: number): Promise<Array<{ key: string; value: Buffer }>> {
  const make = (i: number, pad: string): Turn =>
    syntheticTurn(
      `s${i % 500}`,
      [{ role: 'user', content: `question ${i}: ${pad}`, name: null, toolCallId: null, toolCalls: [] }],
      i,
      Date.now(),
    );
  const base = (await codecs.of('turns').encode(make(0, ''))).length;
  const pad = 'x'.repeat(Math.max(0, TARGET_BYTES - base));
  return Promise.all(
    Array.from({ length: n }, async (_, i) => ({ key: `s${i % 500}`, value: await codecs.of('turns').encode(make(i, pad)) })),
  );
}

/** The family's codecs, with `pairs` standing for the output topic, written with the Turn schema. */
function passthroughCodecs(codecs: EventCodecs, outTopic: string): EventCodecs {
  const view = Object.create(codecs) as EventCodecs;
  view.of = ((id: TopicId) => codecs.of(id === 'pairs' ? 'turns' : id)) as EventCodecs['of'];
  view.topic = (id: TopicId) => (id === 'pairs' ? outTopic : codecs.topic(id));
  return view;
}

export async function run(args: BenchArgs): Promise<StreamsBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const n = Number(o.records);
  const partitions = Number(o.partitions);
  const family = await benchFamily(config, 'streams', partitions, ['turns', 'dlq']);
  try {
    return await measure(family, n, partitions, progress);
  } finally {
    await family.cleanup();
  }
}

async function measure(family: BenchFamily, n: number, partitions: number, progress: (l: string) => void): Promise<StreamsBenchResult> {
  const { prefix, kafka, codecs } = family;
  const data = await records(codecs, n);
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
  const outTopic = `${prefix}bench-runtime-out`;
  await createPlainTopic(kafka, outTopic, partitions);
  let firstAt = 0;
  const handle = await runProcessor({
    name: 'bench-passthrough',
    kafka,
    codecs: passthroughCodecs(codecs, outTopic),
    groupId: `${prefix}bench-runtime`,
    inputs: ['turns'],
    logger: createLogger('bench-passthrough', 'warn'),
    async handle(record, ctx) {
      firstAt ||= performance.now();
      ctx.emit('pairs', record.key, record.value as never);
    },
  });
  let visible = 0;
  let lastAt = 0;
  const watcher = kafka.consumer({ groupId: `${prefix}bench-watch`, readUncommitted: false, maxWaitTimeInMs: 20 });
  await watcher.connect();
  await watcher.subscribe({ topic: outTopic, fromBeginning: true });
  await watcher.run({
    eachBatch: async ({ batch }) => {
      visible += batch.messages.length;
      lastAt = performance.now();
    },
  });
  try {
    await handle.ready;
    const deadline = Date.now() + 600_000;
    while (visible < n) {
      if (Date.now() > deadline) throw new Error(`only ${visible} of ${n} records passed through in 10 min`);
      await sleep(20);
    }
    await sleep(1000);
    if (visible !== n) throw new Error(`${visible} records on the output topic, expected exactly ${n}`);
  } finally {
    const stats = handle.stats();
    await handle.stop();
    await watcher.disconnect();
    progress(`runtime: ${stats.consumed} consumed, ${stats.produced} produced, ${stats.committedTransactions} transactions`);
  }
  const runtimeSeconds = (lastAt - firstAt) / 1000;
  const stats = handle.stats();
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
    runtime_transactions: stats.committedTransactions,
    baseline: 'plain kafkajs consume → produce (acks=all, at-least-once) of the same records',
    ratio: Number((runtimeRate / rawRate).toFixed(4)),
  };
}
