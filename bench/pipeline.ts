// The processing pipeline's throughput and latency: session-assembler → judge (the embedded judge:
// instant, no model server) → sample-builder, each a transactional processor on real Kafka, with
// their default options (the feedback grace period included). Against a baseline in the same run,
// on the same broker and the same records: a raw kafkajs consume → produce passthrough.
//   turnstream bench pipeline [--json] [--sessions 2000] [--turns 10] [--live-sessions 60] [--grace-ms 5000] [--processes 0]
//
// - turns_per_s: a backlog of sessions × turns main turns, from the processors' first join until
//   every sample is visible (read_committed). Heartbeats after the backlog move stream time past
//   the grace period, so the last pairs are not left waiting for the "caught up" wall clock.
// - latency_ms: live traffic (two-turn sessions, 10 sessions/s): from producing the turn that
//   makes a pair ready (the session's second, ending, turn) to its sample being visible. The
//   feedback grace period (held pairs wait for late 👍/👎) is part of it by design.
// - raw_msgs_per_s: the same backlog's records read and re-produced (acks=all) by plain kafkajs,
//   the client turnstream runs on (streams/kafkajs.ts); raw_stock_kafkajs_msgs_per_s: the same
//   on kafkajs as npm ships it.
// - raw_chain_msgs_per_s: the same records through three plain passthroughs in a row, all at once
//   in this process: the pipeline's shape with no work, transactions or state, a ceiling for it.
// - `--processes 1` runs each processor in a child process of its own (bench/pipeline-stage.ts), as
//   `turnstream up` does; 0, the default, runs all three on this process's thread.
import type { Kafka } from 'kafkajs';
import type { BenchArgs } from './options.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { DEFAULT_FEEDBACK_GRACE_MS } from '../processors/index.ts';
import { PIPELINE_STAGES, StageProcess, startPipelineStage } from './pipeline-stage.ts';
import { cores, CpuMeter, type CpuPhase } from './cpu.ts';
import { avroCost, type AvroCost } from './pipeline-codecs.ts';
import type { Turn } from '../schemas/index.ts';
import { EventProducer, type OutgoingEvent, type ProcessorHandle } from '../streams/index.ts';
import { createLogger } from '../core/index.ts';
import { benchFamily, quantile, rawChain, rawPassthrough, sleep, type BenchFamily } from './support.ts';
import { heartbeat, syntheticSession } from './pipeline-traffic.ts';
import { stockKafka } from './stock-kafkajs.ts';

export const description =
  'turns/s through session assembler → embedded judge → sample builder, and live turn→sample latency, against plain kafkajs consume → produce';

export const options: BenchOptions = {
  sessions: { default: '2000', help: 'sessions in the backlog' },
  turns: { default: '10', min: 2, help: 'turns per session' },
  'live-sessions': { default: '60', help: 'live two-turn sessions for the latency figures' },
  'grace-ms': { default: String(DEFAULT_FEEDBACK_GRACE_MS), min: 0, help: 'the feedback grace period, ms' },
  processes: {
    default: '0',
    min: 0,
    help: 'each processor in a process of its own, as `turnstream up` runs them (1), or all three in this one (0)',
  },
};

export interface PipelineBenchResult extends BenchResult {
  turns: number;
  samples: number;
  /** Main turns per second through the three processors (backlog). */
  turns_per_s: number;
  seconds: number;
  /** Live traffic: turn event produced → its sample visible. */
  latency_ms: { p50: number; p99: number; max: number; n: number };
  feedback_grace_ms: number;
  /** The same records through a plain kafkajs consumer → producer. */
  raw_msgs_per_s: number;
  raw_seconds: number;
  /** The same passthrough on kafkajs as npm ships it (bench/stock-kafkajs.ts). */
  raw_stock_kafkajs_msgs_per_s: number;
  /** turns_per_s / raw_msgs_per_s. */
  ratio: number;
  /**
   * The pipeline's shape doing nothing: three plain kafkajs passthroughs in a row, all running at
   * once in one process (turns → hop 1 → hop 2 → hop 3, no transactions, no state, no work), the
   * records per second through all three; what any three-stage pipeline on this client and broker
   * is bounded by.
   */
  raw_chain_msgs_per_s: number;
  /** raw_chain_msgs_per_s / raw_msgs_per_s: the most `ratio` could be with three stages. */
  raw_chain_ratio: number;
  /** CPU seconds by process (this one, each stage's with `--processes 1`, Kafka…) of the backlog and of the raw passthrough, and how busy the machine was. */
  cpu: { cores: number; pipeline: CpuPhase; raw: CpuPhase };
  /** Avro's share: the backlog's first sessions through the pure cores in memory, each record the stages read decoded and each they write encoded (bench/pipeline-codecs.ts). */
  avro: AvroCost;
  mean_turn_bytes: number;
  partitions: number;
}

const PARTITIONS = 3;

/** Follows the samples topic (read_committed): when each sample's turn became visible. */
async function watchSamples(
  kafka: Kafka,
  topic: string,
  prefix: string,
): Promise<{ seen: Map<string, number>; stop: () => Promise<void> }> {
  const seen = new Map<string, number>();
  const consumer = kafka.consumer({ groupId: `${prefix}bench-watch`, readUncommitted: false, maxWaitTimeInMs: 20 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const now = Date.now();
      for (const m of batch.messages) {
        // The sample id is `<turnId>:<METHOD>` and sits early in the record: find it without decoding.
        const id = /([0-9a-f-]{36}):COMBINED/.exec(m.value?.toString('latin1') ?? '')?.[1];
        if (id && !seen.has(id)) seen.set(id, now);
      }
    },
  });
  return { seen, stop: () => consumer.disconnect() };
}

/** The run's sizes and modes, from the options. */
interface PipelineSettings {
  sessions: number;
  turnsPerSession: number;
  liveSessions: number;
  graceMs: number;
  /** Each stage in a child process of its own. */
  processes: boolean;
}

/** What the parts of one run share. */
interface PipelineRun extends PipelineSettings {
  family: BenchFamily;
  meter: CpuMeter;
  /** Produces turns to the turns topic, keyed by session. */
  send: (turns: Turn[]) => Promise<void>;
  progress: (line: string) => void;
}

/** The processors, started in this process (`handles`) or as child processes (`children`). */
interface Stages {
  handles: ProcessorHandle[];
  children: StageProcess[];
}

/** Runs the pipeline benchmark (see the module comment). */
export async function run(args: BenchArgs): Promise<PipelineBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const family = await benchFamily(config, 'pipeline', PARTITIONS);
  try {
    return await measure(
      family,
      {
        sessions: Number(o.sessions),
        turnsPerSession: Number(o.turns),
        liveSessions: Number(o['live-sessions']),
        graceMs: Number(o['grace-ms']),
        processes: Number(o.processes) > 0,
      },
      progress,
    );
  } finally {
    await family.cleanup();
  }
}

async function measure(family: BenchFamily, settings: PipelineSettings, progress: (line: string) => void): Promise<PipelineBenchResult> {
  const { prefix, kafka, codecs } = family;
  const producer = new EventProducer(kafka, codecs);
  await producer.connect();
  const send = async (turns: Turn[]) => {
    const events: OutgoingEvent[] = turns.map((t) => ({ id: 'turns', key: t.sessionId, value: t }));
    for (let i = 0; i < events.length; i += 500) await producer.sendAll(events.slice(i, i + 500));
  };
  const r: PipelineRun = { ...settings, family, meter: new CpuMeter(family), send, progress };
  const { backlog, bytes } = await produceBacklog(r);
  const baselines = await measureBaselines(r, backlog.length + 8 * PARTITIONS);

  // The pipeline, on the backlog.
  const watch = await watchSamples(kafka, codecs.topic('samples'), prefix);
  progress('pipeline: session-assembler → embedded judge → sample-builder on the backlog');
  const stages: Stages = { handles: [], children: [] };
  let backlogDone: BacklogTiming;
  let latencies: number[] = [];
  try {
    await startStages(r, stages);
    backlogDone = await timeBacklog(r, stages, watch.seen, backlog.length);
    latencies = await liveLatencies(r, watch.seen);
  } finally {
    await Promise.all([...stages.handles, ...stages.children].map((h) => h.stop().catch(() => undefined)));
    await watch.stop();
    await producer.disconnect();
  }
  latencies.sort((x, y) => x - y);
  progress("Avro's share: the first sessions' records encoded and decoded in memory");
  const firstSessions = new Set(backlog.slice(0, Math.min(300, settings.sessions)).map((t) => t.sessionId));
  const avro = await avroCost(
    codecs,
    backlog.filter((t) => firstSessions.has(t.sessionId)),
    settings.graceMs,
  );
  return result(r, backlog.length, bytes, baselines, backlogDone, latencies, avro);
}

/** Produces the backlog and the heartbeats after it; returns the backlog and a turn's mean encoded size. */
async function produceBacklog(r: PipelineRun): Promise<{ backlog: Turn[]; bytes: number }> {
  const { sessions, turnsPerSession, graceMs } = r;
  const { codecs } = r.family;
  // The backlog: history that ended an hour ago, turns 100 ms apart across sessions.
  const stepMs = 100;
  const start = Date.now() - 3600_000 - sessions * turnsPerSession * stepMs;
  const backlog: Turn[] = [];
  for (let s = 0; s < sessions; s++)
    backlog.push(...syntheticSession(`b${s}`, turnsPerSession, (i) => start + (i * sessions + s) * stepMs));
  backlog.sort((x, y) => x.requestedAt - y.requestedAt);
  const total = backlog.length;
  const lastAt = backlog[total - 1].completedAt;
  r.progress(`producing a backlog of ${total} turns (${sessions} sessions × ${turnsPerSession}) to ${r.family.prefix}*`);
  await r.send(backlog);
  // Heartbeats on many keys (so on every partition) put stream time past the last grace period.
  await r.send(Array.from({ length: 8 * PARTITIONS }, (_, k) => heartbeat(`hb${k}`, lastAt + graceMs + 1000)));
  // Over turns spread through the backlog: it is sorted by time, so its head is every session's first (shortest) turn.
  const spread = backlog.filter((_, i) => i % Math.max(1, Math.floor(total / 500)) === 0);
  const bytes = (await Promise.all(spread.map((t) => codecs.of('turns').encode(t)))).reduce((n, b) => n + b.length, 0) / spread.length;
  return { backlog, bytes };
}

interface Baselines {
  rawCount: number;
  rawSeconds: number;
  rawCpu: CpuPhase;
  stockSeconds: number;
  chainSeconds: number;
}

/** The plain kafkajs passthrough (ours and stock) and the three-hop chain, over the same `rawCount` records. */
async function measureBaselines(r: PipelineRun, rawCount: number): Promise<Baselines> {
  const { prefix, kafka, codecs } = r.family;
  // Baseline: the same records, consumed and re-produced by plain kafkajs.
  r.progress('baseline: raw kafkajs consume → produce of the same records');
  const { value: rawSeconds, cpu: rawCpu } = await r.meter.measure(() =>
    rawPassthrough(kafka, codecs.topic('turns'), `${prefix}bench-raw-out`, rawCount, `${prefix}bench-raw`, PARTITIONS),
  );
  r.progress('baseline: the same with stock kafkajs (without the replacements of streams/kafkajs.ts)');
  const stock = stockKafka(r.family.clientOptions);
  const stockSeconds = await rawPassthrough(
    stock.kafka,
    codecs.topic('turns'),
    `${prefix}bench-raw-stock-out`,
    rawCount,
    `${prefix}bench-raw-stock`,
    PARTITIONS,
    stock.partitioner,
  );

  r.progress('floor: three plain kafkajs passthroughs in a row on the same records');
  const chainSeconds = await rawChain(
    kafka,
    codecs.topic('turns'),
    [1, 2, 3].map((i) => `${prefix}bench-chain-${i}`),
    rawCount,
    `${prefix}bench-chain`,
    PARTITIONS,
  );
  return { rawCount, rawSeconds, rawCpu, stockSeconds, chainSeconds };
}

/** Starts the three processors (filling `stages` as it goes, so a failure stops those started) and waits until they are ready. */
async function startStages(r: PipelineRun, stages: Stages): Promise<void> {
  const { kafka, codecs, prefix } = r.family;
  const logger = createLogger('bench', 'warn');
  const common = { kafka, codecs, logger };
  if (r.processes) {
    stages.children.push(...PIPELINE_STAGES.map((stage) => new StageProcess(stage, r.family.endpoints, prefix, r.graceMs)));
    await Promise.all(stages.children.map((c) => c.ready));
  } else {
    for (const stage of PIPELINE_STAGES) stages.handles.push(await startPipelineStage(stage, common, r.graceMs));
    await Promise.all(stages.handles.map((h) => h.ready));
  }
}

interface BacklogTiming {
  seconds: number;
  cpu: CpuPhase;
  /** Samples seen when the last of the backlog's arrived. */
  samples: number;
}

/** Waits until every backlog turn's sample is visible, reporting the stages' counts every 5 s. */
async function timeBacklog(r: PipelineRun, stages: Stages, seen: Map<string, number>, total: number): Promise<BacklogTiming> {
  const { handles, children } = stages;
  const backlogDone = await r.meter.measure(
    async () => {
      const t0 = performance.now();
      let lastReport = t0;
      while (seen.size < total) {
        if (performance.now() - t0 > 600_000) throw new Error(`only ${seen.size} of ${total} samples after 10 min`);
        if (performance.now() - lastReport > 5000) {
          // In this process only: each stage's counts (child processes keep theirs).
          const st = handles
            .map((h) => h.stats())
            .map((x) => `${x.consumed}→${x.produced} (in flight ${x.inFlight}, paused ${x.pausedPartitions}, dlq ${x.deadLettered})`);
          r.progress(`  ${seen.size}/${total} samples${st.length ? `; assembler ${st[0]}, judge ${st[1]}, builder ${st[2]}` : ''}`);
          lastReport = performance.now();
        }
        await sleep(20);
      }
    },
    () => Object.fromEntries(children.map((c) => [c.stage, c.pid])),
  );
  return { seconds: backlogDone.seconds, cpu: backlogDone.cpu, samples: seen.size };
}

/** Live two-turn sessions, 10 a second: for each turn, ms from producing its session's end to its sample being visible. */
async function liveLatencies(r: PipelineRun, seen: Map<string, number>): Promise<number[]> {
  const { liveSessions, graceMs } = r;
  // Live traffic: each tick starts a session and ends the previous one (its two pairs ready).
  r.progress(`latency: ${liveSessions} live two-turn sessions, 10 per second`);
  const made = new Map<string, number>();
  const live = Array.from({ length: liveSessions }, (_, s) => `l${s}`);
  const turnsOf = new Map<string, Turn[]>();
  const tickMs = 100;
  const ticks = liveSessions + 1 + Math.ceil((graceMs + 2000) / tickMs);
  for (let k = 0; k < ticks; k++) {
    const now = Date.now();
    const out: Turn[] = [];
    if (k < liveSessions) {
      const t = syntheticSession(live[k], 2, (i) => now + i);
      turnsOf.set(live[k], t);
      out.push(t[0]);
    }
    if (k >= 1 && k <= liveSessions) out.push(turnsOf.get(live[k - 1])![1]);
    // After the measured sessions: heartbeats only, so stream time keeps moving as it does live.
    else if (k > liveSessions) out.push(heartbeat(`hb-live${k % (8 * PARTITIONS)}`, now));
    await r.send(out);
    const sentAt = Date.now();
    if (k >= 1 && k <= liveSessions) for (const t of turnsOf.get(live[k - 1])!) made.set(t.turnId, sentAt);
    await sleep(Math.max(0, tickMs - (Date.now() - now)));
  }
  const deadline = Date.now() + 60_000;
  while ([...made.keys()].some((id) => !seen.has(id)) && Date.now() < deadline) await sleep(50);
  const latencies = [...made].filter(([id]) => seen.has(id)).map(([id, at]) => seen.get(id)! - at);
  if (latencies.length < made.size) throw new Error(`${made.size - latencies.length} live samples never became visible`);
  return latencies;
}

function result(
  r: PipelineRun,
  total: number,
  bytes: number,
  b: Baselines,
  backlog: BacklogTiming,
  latencies: number[],
  avro: AvroCost,
): PipelineBenchResult {
  const { seconds } = backlog;
  const rawRate = b.rawCount / b.rawSeconds;
  const chainRate = b.rawCount / b.chainSeconds;
  const rate = total / seconds;
  return {
    turns: total,
    samples: backlog.samples,
    turns_per_s: Math.round(rate),
    seconds: Number(seconds.toFixed(2)),
    latency_ms: { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies.at(-1) ?? Number.NaN, n: latencies.length },
    feedback_grace_ms: r.graceMs,
    raw_msgs_per_s: Math.round(rawRate),
    raw_seconds: Number(b.rawSeconds.toFixed(2)),
    raw_stock_kafkajs_msgs_per_s: Math.round(b.rawCount / b.stockSeconds),
    baseline: 'plain kafkajs consume → produce of the same records',
    ratio: Number((rate / rawRate).toFixed(4)),
    raw_chain_msgs_per_s: Math.round(chainRate),
    raw_chain_ratio: Number((chainRate / rawRate).toFixed(4)),
    cpu: { cores: cores(), pipeline: backlog.cpu, raw: b.rawCpu },
    avro,
    mean_turn_bytes: Math.round(bytes),
    partitions: PARTITIONS,
  };
}
