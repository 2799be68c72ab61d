/**
 * The turnstream side of the passthrough benchmarks (`bench streams`, `bench kstreams`): ~1 KB
 * Avro Turn records, and the transactional runtime reading them, handing each to a handler that
 * emits it again to another topic (or each fetched batch to a batch handler), exactly once,
 * timed up to the last record a read_committed consumer sees.
 */
import type { TopicId, Turn } from '../schemas/index.ts';
import { runProcessor, type EventCodecs } from '../streams/index.ts';
import { createLogger } from '../core/index.ts';
import { createPlainTopic, sleep, type BenchFamily } from './support.ts';
import { syntheticTurn } from './pipeline-traffic.ts';

const TARGET_BYTES = 1024;

/** `n` Turn records of about 1 KB each (Avro, wire format), over 500 keys. */
export async function turnRecords(codecs: EventCodecs, n: number): Promise<Array<{ key: string; value: Buffer }>> {
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

export interface RuntimePassthroughRun {
  /** From the first record handed to the handler to the last output record visible read_committed. */
  seconds: number;
  committedTransactions: number;
  /** Input records of the largest transaction. */
  largestTransaction: number;
  /** The longest wait between two batches of output becoming visible (read_committed), once output began. */
  maxOutputGapMs: number;
}

/**
 * `runProcessor` reads the family's `turns` topic from the beginning (group `groupId`, fresh per
 * run), decodes each record, and its handler emits it again (encoded) to `outTopic`, created
 * here; outputs and offsets commit in one transaction. Throws unless exactly `n` records reach
 * `outTopic`.
 */
export async function runtimePassthrough(
  family: BenchFamily,
  n: number,
  partitions: number,
  outTopic: string,
  groupId: string,
  progress: (l: string) => void,
  runtime: { maxTransactionRecords?: number; batch?: boolean } = {},
): Promise<RuntimePassthroughRun> {
  const { kafka, codecs } = family;
  await createPlainTopic(kafka, outTopic, partitions);
  let firstAt = 0;
  const handle = await runProcessor({
    name: 'bench-passthrough',
    kafka,
    codecs: passthroughCodecs(codecs, outTopic),
    groupId,
    inputs: ['turns'],
    maxTransactionRecords: runtime.maxTransactionRecords,
    logger: createLogger('bench-passthrough', 'warn'),
    ...(runtime.batch
      ? {
          async handleBatch(records, ctx) {
            firstAt ||= performance.now();
            for (const r of records) ctx.emit('pairs', r.key, r.value as never);
          },
        }
      : {
          async handle(record, ctx) {
            firstAt ||= performance.now();
            ctx.emit('pairs', record.key, record.value as never);
          },
        }),
  });
  let visible = 0;
  let lastAt = 0;
  let maxGap = 0;
  const watcher = kafka.consumer({ groupId: `${groupId}-watch`, readUncommitted: false, maxWaitTimeInMs: 20 });
  await watcher.connect();
  await watcher.subscribe({ topic: outTopic, fromBeginning: true });
  await watcher.run({
    eachBatch: async ({ batch }) => {
      visible += batch.messages.length;
      const now = performance.now();
      if (lastAt > 0) maxGap = Math.max(maxGap, now - lastAt);
      lastAt = now;
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
  const { committedTransactions, largestTransaction } = handle.stats();
  return { seconds: (lastAt - firstAt) / 1000, committedTransactions, largestTransaction, maxOutputGapMs: Math.round(maxGap) };
}
