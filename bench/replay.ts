// Replay throughput: historical turns re-derived per second (session assembler → embedded judge →
// sample builder into tagged topics, from the range's start until all three stages have caught
// up and stopped), against a baseline in the same run: a raw read of the same turns (decode only).
// Then a floor: the replay's own outputs (about three records per turn) produced again by plain
// kafkajs, the least time any replay that writes them with this client can take; and the same
// floor on kafkajs as npm ships it.
//   turnstream bench replay [--json] [--turns 5000] [--turns-per-session 10]
import { join } from 'node:path';
import type { BenchArgs } from './options.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { createEmbeddedJudge } from '../processors/index.ts';
import { parseBound, runReplay } from '../history/index.ts';
import type { ChatMessage, Turn } from '../schemas/index.ts';
import { EventProducer, readToEnd } from '../streams/index.ts';
import { createLogger } from '../core/index.ts';
import { createPlainTopic, withBenchFamily, rawProduce, type BenchFamily } from './support.ts';
import { stockKafka } from './stock-kafkajs.ts';
import { cores, CpuMeter, type CpuPhase } from './cpu.ts';

export const description =
  'historical turns re-derived per second by a replay (assembler → embedded judge → sample builder), against a decode-only read of the same turns';

export const options: BenchOptions = {
  turns: { default: '5000', help: 'turns of history' },
  'turns-per-session': { default: '10', help: 'turns per session' },
};

export interface ReplayBenchResult extends BenchResult {
  turns: number;
  sessions: number;
  /** Turns re-derived per second, end to end (including group joins and the end-of-range wait). */
  turns_per_s: number;
  seconds: number;
  pairs: number;
  judgements: number;
  samples: number;
  /** The same turns read and decoded straight from the topic. */
  baseline_turns_per_s: number;
  baseline_seconds: number;
  /** turns_per_s / baseline_turns_per_s. */
  ratio: number;
  /** Records the replay wrote (pairs, judgements, samples) and their mean size. */
  output_records: number;
  output_mean_bytes: number;
  /**
   * The same output records produced again by plain kafkajs (idempotent, acks=all, no
   * transaction, no encoding): a floor under any replay that writes them with this client.
   */
  produce_floor_seconds: number;
  /** The same floor on kafkajs as npm ships it (bench/stock-kafkajs.ts). */
  produce_floor_stock_kafkajs_seconds: number;
  /** produce_floor_seconds / seconds: the share of the replay's time that writing its outputs alone takes. */
  floor_share: number;
  /** CPU seconds by process (this one, Kafka…) of the replay, of the decode-only read and of the produce floor, and how busy the machine was. */
  cpu: { cores: number; replay: CpuPhase; baseline: CpuPhase; produce_floor: CpuPhase };
  judge: string;
}

const msg = (role: string, content: string): ChatMessage => ({ role, content, name: null, toolCallId: null, toolCalls: [] });
const REPLIES = ['Thanks, that works 👍', "No, that's too long.", 'ok', 'Great, perfect!', 'That is wrong, try again.'];

/** Gateway-style tokenized sessions: user replies that the embedded judge scores +1, −1 or 0. */
function history(prefix: string, turns: number, perSession: number, t0: number): Turn[] {
  const out: Turn[] = [];
  for (let s = 0; out.length < turns; s++) {
    const sessionId = `${prefix}s${s}`;
    const h: ChatMessage[] = [msg('system', 'Be brief.')];
    for (let i = 0; i < perSession && out.length < turns; i++) {
      h.push(msg('user', i === 0 ? 'hello' : REPLIES[(s + i) % REPLIES.length]));
      const n = out.length;
      out.push({
        turnId: `${prefix}t${n}`,
        sessionId,
        sessionSource: 'HEADER',
        userId: `u${s % 7}`,
        turnType: 'MAIN',
        sessionDone: i === perSession - 1,
        requestedAt: t0 + n * 10,
        completedAt: t0 + n * 10 + 5,
        model: 'turnstream-tiny',
        policyModelId: 'turnstream-tiny',
        policyVersion: 0,
        requestMessages: [...h],
        toolsJson: null,
        response: { content: `reply ${i}`, toolCalls: [], finishReason: 'stop' },
        promptTokenIds: Array.from({ length: 16 }, (_, k) => (k * 7 + n) % 256),
        responseTokenIds: [72, 105, 33, 10],
        responseLogprobs: [-0.5, -0.25, -1, -0.1],
        tokenized: true,
        exactLogprobs: true,
        promptTruncatedTokens: 0,
        sampling: { temperature: 0.7, topP: 1, maxTokens: 64, seed: null, stop: [] },
        usage: { promptTokens: 16, completionTokens: 4, totalTokens: 20 },
        latencyMs: 5,
        gatewayId: 'bench',
      });
      h.push(msg('assistant', `reply ${i}`));
    }
  }
  return out;
}

export async function run(args: BenchArgs): Promise<ReplayBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const turns = Number(o.turns);
  const perSession = Number(o['turns-per-session']);
  return withBenchFamily(config, 'replay', 6, undefined, (family, dir) => measure(family, dir, turns, perSession, progress));
}

async function measure(
  family: BenchFamily,
  dir: string,
  turns: number,
  perSession: number,
  progress: (l: string) => void,
): Promise<ReplayBenchResult> {
  const { endpoints: stack, prefix, kafka, codecs } = family;
  // History from a day ago: idle timeouts and feedback grace are long past, as for real history.
  const data = history(prefix, turns, perSession, Date.now() - 24 * 3600_000);
  progress(`producing ${turns} turns to ${codecs.topic('turns')}`);
  const producer = new EventProducer(kafka, codecs);
  await producer.connect();
  for (let i = 0; i < data.length; i += 500)
    await producer.sendAll(data.slice(i, i + 500).map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t })));
  await producer.disconnect();

  progress('baseline: raw read of the turns (decode only)');
  const meter = new CpuMeter(family);
  let read = 0;
  const { seconds: baselineSeconds, cpu: baselineCpu } = await meter.measure(() =>
    readToEnd(kafka, codecs.topic('turns'), async (r) => {
      if (r.value) {
        await codecs.of('turns').decode(r.value);
        read++;
      }
    }),
  );
  if (read !== turns) throw new Error(`baseline read ${read} of ${turns} turns`);

  progress('replay: session assembler → embedded judge → sample builder');
  const judge = createEmbeddedJudge({ mode: 'rl' });
  const {
    value: summary,
    seconds,
    cpu: replayCpu,
  } = await meter.measure(() =>
    runReplay({
      kafka,
      registryUrl: stack.registryUrl,
      registrySecurity: family.security.registry,
      prefix,
      tag: 'bench',
      from: parseBound('0'),
      judge,
      samples: { method: 'rl' },
      planFile: join(dir, 'plan.json'),
      logger: createLogger('replay', 'warn'),
    }),
  );
  const sessions = Math.ceil(turns / perSession);
  if (summary.pairs.total !== turns) throw new Error(`replay gave ${summary.pairs.total} pairs for ${turns} turns`);

  progress("floor: the replay's outputs produced again with plain kafkajs");
  const outputs: Array<{ key: string; value: Buffer }> = [];
  for (const id of ['pairs', 'judgements', 'samples'] as const)
    await readToEnd(
      kafka,
      summary.topics[id],
      (r) => void (r.value && outputs.push({ key: r.key?.toString('utf8') ?? '', value: r.value })),
    );
  const floorTopic = `${prefix}bench-replay-floor`;
  await createPlainTopic(kafka, floorTopic, 6);
  const { value: floorSeconds, cpu: floorCpu } = await meter.measure(() => rawProduce(kafka, floorTopic, outputs));
  progress('floor: the same with stock kafkajs (without the replacements of streams/kafkajs.ts)');
  const stock = stockKafka(family.clientOptions);
  await createPlainTopic(kafka, `${floorTopic}-stock`, 6);
  const stockFloorSeconds = await rawProduce(stock.kafka, `${floorTopic}-stock`, outputs, 500, stock.partitioner);
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    turns,
    sessions,
    turns_per_s: round(turns / seconds),
    seconds: round(seconds),
    pairs: summary.pairs.total,
    judgements: summary.judgements.total,
    samples: summary.samples.total,
    baseline_turns_per_s: round(turns / baselineSeconds),
    baseline_seconds: round(baselineSeconds),
    baseline: 'a decode-only read of the same turns from the topic',
    ratio: Math.round((turns / seconds / (turns / baselineSeconds)) * 1000) / 1000,
    output_records: outputs.length,
    output_mean_bytes: Math.round(outputs.reduce((n, r) => n + r.value.length, 0) / Math.max(1, outputs.length)),
    produce_floor_seconds: Number(floorSeconds.toFixed(2)),
    produce_floor_stock_kafkajs_seconds: Number(stockFloorSeconds.toFixed(2)),
    floor_share: Math.round((floorSeconds / seconds) * 1000) / 1000,
    cpu: { cores: cores(), replay: replayCpu, baseline: baselineCpu, produce_floor: floorCpu },
    judge: judge.id,
  };
}
