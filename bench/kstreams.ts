// turnstream's runtime passthrough against its real peer, Kafka Streams, on the same broker and
// the same ~1 KB Avro Turn records, runs interleaved:
//   turnstream bench kstreams [--json] [--records 20000] [--partitions 3] [--pairs 3] [--warmups 3]
//
// - kstreams: the Maven project in bench/kstreams (kafka-streams at the broker's version, EOS v2,
//   one stream thread, each record decoded with Avro's GenericDatumReader and encoded again behind
//   the same wire header). One JVM serves every run; its first run(s) (`--warmups`) are unmeasured, to warm it.
// - runtime: `runProcessor` decoding each record and emitting it again, exactly once (the
//   passthrough of `bench streams`), with a per-record handler and with a batch handler.
// - raw: plain kafkajs consume → produce (acks=all, at-least-once), the baseline of `bench streams`.
//
// Every run reads the same input topic from the beginning with a fresh group / application.id and
// writes a fresh output topic. Both exactly-once sides are timed the same way: from the first
// record their handler sees to the last output record a read_committed consumer in the same process
// sees (a kafkajs consumer next to the runtime, a KafkaConsumer in the JVM), both polling at most
// every 20 ms, and both fail unless exactly N records reach the output. The figures are medians of
// the pairs; ratio is runtime ÷ kstreams.
import { createHash } from 'node:crypto';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { BenchArgs } from './options.ts';
import { KAFKA_VERSION, checkPrerequisites, runCommand } from '../infra/index.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { median, withBenchFamily, rawPassthrough, rawProduce, type BenchFamily } from './support.ts';
import { runtimePassthrough, turnRecords } from './runtime-passthrough.ts';

export const description =
  'the exactly-once runtime passthrough against Kafka Streams (EOS v2, Avro, warm JVM) and kafkajs consume → produce, interleaved';

export const options: BenchOptions = {
  records: { default: '20000', min: 100, help: 'Turn records of ~1 KB' },
  partitions: { default: '3', help: 'partitions of the topics' },
  pairs: { default: '3', help: 'interleaved measured rounds (each: Kafka Streams, runtime per record and batched, raw kafkajs)' },
  // One run of 20,000 leaves the JIT cold: Kafka Streams ran 6,000 → 9,600 → 14,000 → 13,000-18,000 msgs/s
  // in consecutive runs here. Three warm-ups bring it near the figure the issue calls warm.
  warmups: { default: '3', help: 'unmeasured Kafka Streams runs first, to warm the JVM (its JIT)' },
};

export interface KStreamsBenchResult extends BenchResult {
  records: number;
  mean_record_bytes: number;
  partitions: number;
  pairs: number;
  warmups: number;
  kafka_streams_version: string;
  /** Medians over the pairs. */
  kstreams_msgs_per_s: number;
  runtime_passthrough_msgs_per_s: number;
  /** The same passthrough with a batch handler (`handleBatch`: each fetched batch in one call). */
  runtime_batch_passthrough_msgs_per_s: number;
  raw_passthrough_msgs_per_s: number;
  /** Each pair's figures, in run order; `kstreams_records`: what its read_committed consumer counted on the output. */
  runs: Array<{
    kstreams_msgs_per_s: number;
    kstreams_records: number;
    runtime_msgs_per_s: number;
    runtime_batch_msgs_per_s: number;
    raw_msgs_per_s: number;
  }>;
  /** The unmeasured warm-up runs of the JVM, in order (the first is the cold one). */
  kstreams_warmup_msgs_per_s: number[];
  /** runtime ÷ Kafka Streams (medians): the figure of issue 14's "≥ 1.0×". */
  ratio: number;
  /** runtime ÷ raw kafkajs consume → produce (medians). */
  ratio_raw: number;
  /** The batch handler ÷ Kafka Streams (medians). */
  ratio_batch: number;
  /** The batch handler ÷ raw kafkajs consume → produce (medians). */
  ratio_batch_raw: number;
}

const PROJECT = fileURLToPath(new URL('./kstreams/', import.meta.url));
const SCHEMA = fileURLToPath(new URL('../schemas/avsc/turnstream.turns.v1.avsc', import.meta.url));
const SOURCE = join(PROJECT, 'src/main/java/dev/turnstream/bench/KStreamsPassthrough.java');
const MAIN_CLASS = 'dev.turnstream.bench.KStreamsPassthrough';

/**
 * Builds bench/kstreams into its target/ unless the same pom, source and Kafka version built it
 * already: `mvn -o` first (seconds, from ~/.m2), online when that fails. Returns the classpath.
 */
export async function buildKStreamsPeer(progress: (l: string) => void, mvn = 'mvn'): Promise<string> {
  const target = join(PROJECT, 'target');
  const stamp = join(target, '.build-sha256');
  const digest = createHash('sha256')
    .update(readFileSync(join(PROJECT, 'pom.xml')))
    .update(readFileSync(SOURCE))
    .update(KAFKA_VERSION)
    .digest('hex');
  const classpath = `${join(target, 'classes')}:${join(target, 'libs')}/*`;
  const built = existsSync(join(target, 'libs', `kafka-streams-${KAFKA_VERSION}.jar`)) && existsSync(stamp);
  if (built && readFileSync(stamp, 'utf8') === digest) return classpath;
  checkPrerequisites({ java: 'java', mvn });
  const args = ['-q', '-B', '-f', join(PROJECT, 'pom.xml'), `-Dkafka.version=${KAFKA_VERSION}`, 'clean', 'package'];
  progress(`building the Kafka Streams peer (kafka-streams ${KAFKA_VERSION}) with Maven`);
  try {
    await runCommand(mvn, ['-o', ...args], { what: 'building bench/kstreams offline' });
  } catch {
    progress('offline build failed (dependencies not in ~/.m2 yet): building online');
    await runCommand(mvn, args, { what: 'building bench/kstreams' });
  }
  writeFileSync(stamp, digest);
  return classpath;
}

interface PeerRun {
  records: number;
  seconds: number;
  msgs_per_s: number;
  kafka_streams_version: string;
}

/** The JVM of the Kafka Streams peer: one process, one run per `run()`, in order. */
class KStreamsPeer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: AsyncIterator<string>;
  private stderr = '';
  private exited: Promise<never>;

  constructor(classpath: string, args: Record<string, string>) {
    const argv = ['-cp', classpath, MAIN_CLASS, ...Object.entries(args).flatMap(([k, v]) => [`--${k}`, v])];
    this.child = spawn('java', argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.on('data', (b: Buffer) => (this.stderr = (this.stderr + b.toString()).slice(-4000)));
    this.lines = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
    this.exited = new Promise<never>((_, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code, sig) =>
        reject(
          new Error(
            `the Kafka Streams peer exited (${sig ?? `exit ${code}`}):\n${this.stderr.trimEnd().split('\n').slice(-20).join('\n')}`,
          ),
        ),
      );
    });
    this.exited.catch(() => undefined);
  }

  /** One run with a fresh application.id writing `outTopic`; its figures. */
  async run(applicationId: string, outTopic: string): Promise<PeerRun> {
    this.child.stdin.write(`${applicationId} ${outTopic}\n`);
    const next = await Promise.race([this.lines.next(), this.exited]);
    if (next.done) return this.exited;
    return JSON.parse(next.value) as PeerRun;
  }

  /** Ends the JVM (EOF on stdin) and waits for it. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const closed = new Promise<void>((r) => this.child.once('close', () => r()));
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await closed;
    clearTimeout(timer);
  }
}

export async function run(args: BenchArgs): Promise<KStreamsBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const classpath = await buildKStreamsPeer(progress);
  return withBenchFamily(config, 'kstreams', Number(o.partitions), ['turns', 'dlq'], (family, dir) =>
    measure(family, classpath, dir, Number(o.records), Number(o.partitions), Number(o.pairs), Number(o.warmups), progress),
  );
}

async function measure(
  family: BenchFamily,
  classpath: string,
  stateDir: string,
  n: number,
  partitions: number,
  pairs: number,
  warmups: number,
  progress: (l: string) => void,
): Promise<KStreamsBenchResult> {
  const { prefix, kafka, codecs } = family;
  const input = codecs.topic('turns');
  const data = await turnRecords(codecs, n);
  const meanBytes = data.reduce((s, r) => s + r.value.length, 0) / n;
  progress(`producing ${n} records of ~${Math.round(meanBytes)} B to ${input}`);
  await rawProduce(kafka, input, data);

  const peer = new KStreamsPeer(classpath, {
    bootstrap: family.endpoints.brokers,
    input,
    schema: SCHEMA,
    records: String(n),
    'state-dir': stateDir,
  });
  try {
    const kstreams = async (tag: string): Promise<PeerRun> => {
      const r = await peer.run(`${prefix}kstreams-${tag}`, `${prefix}kstreams-${tag}-out`);
      if (r.records !== n) throw new Error(`Kafka Streams wrote ${r.records} records, expected exactly ${n}`);
      progress(`kafka streams ${tag}: ${Math.round(r.msgs_per_s)} msgs/s`);
      return r;
    };
    progress(`kafka streams: warming the JVM (${warmups} unmeasured run${warmups > 1 ? 's' : ''})`);
    const warm: PeerRun[] = [];
    for (let i = 0; i < warmups; i++) warm.push(await kstreams(`warm${i}`));
    const runs: KStreamsBenchResult['runs'] = [];
    const rates = { kstreams: [] as number[], runtime: [] as number[], batch: [] as number[], raw: [] as number[] };
    for (let i = 0; i < pairs; i++) {
      const tag = `p${i}`;
      const runtime = async (batch: boolean): Promise<number> => {
        const name = `${prefix}runtime-${batch ? 'batch-' : ''}${tag}`;
        const r = await runtimePassthrough(family, n, partitions, `${name}-out`, name, progress, { batch });
        progress(`runtime${batch ? ', batch handler,' : ''} ${tag}: ${Math.round(n / r.seconds)} msgs/s`);
        return n / r.seconds;
      };
      // Alternate which exactly-once side goes first, so neither always runs on a cooler machine.
      let ks: PeerRun;
      let rt: number;
      let bt: number;
      if (i % 2 === 0) {
        ks = await kstreams(tag);
        rt = await runtime(false);
        bt = await runtime(true);
      } else {
        bt = await runtime(true);
        rt = await runtime(false);
        ks = await kstreams(tag);
      }
      const rawSeconds = await rawPassthrough(kafka, input, `${prefix}raw-${tag}-out`, n, `${prefix}raw-${tag}`, partitions);
      progress(`raw kafkajs ${tag}: ${Math.round(n / rawSeconds)} msgs/s`);
      rates.kstreams.push(ks.msgs_per_s);
      rates.runtime.push(rt);
      rates.batch.push(bt);
      rates.raw.push(n / rawSeconds);
      runs.push({
        kstreams_msgs_per_s: Math.round(ks.msgs_per_s),
        kstreams_records: ks.records,
        runtime_msgs_per_s: Math.round(rt),
        runtime_batch_msgs_per_s: Math.round(bt),
        raw_msgs_per_s: Math.round(n / rawSeconds),
      });
    }
    const kstreamsRate = median(rates.kstreams);
    const runtimeRate = median(rates.runtime);
    const batchRate = median(rates.batch);
    const rawRate = median(rates.raw);
    return {
      records: n,
      mean_record_bytes: Math.round(meanBytes),
      partitions,
      pairs,
      warmups,
      kafka_streams_version: warm[0].kafka_streams_version,
      kstreams_msgs_per_s: Math.round(kstreamsRate),
      runtime_passthrough_msgs_per_s: Math.round(runtimeRate),
      runtime_batch_passthrough_msgs_per_s: Math.round(batchRate),
      raw_passthrough_msgs_per_s: Math.round(rawRate),
      runs,
      kstreams_warmup_msgs_per_s: warm.map((r) => Math.round(r.msgs_per_s)),
      baseline:
        'Kafka Streams (EOS v2, one thread, Avro decode + re-encode, warm JVM) on the same records; ratio_raw: plain kafkajs consume → produce',
      ratio: Number((runtimeRate / kstreamsRate).toFixed(4)),
      ratio_raw: Number((runtimeRate / rawRate).toFixed(4)),
      ratio_batch: Number((batchRate / kstreamsRate).toFixed(4)),
      ratio_batch_raw: Number((batchRate / rawRate).toFixed(4)),
    };
  } finally {
    await peer.close();
  }
}
