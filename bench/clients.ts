// The Kafka client turnstream runs on (kafkajs 2.2.4, its last release, with the hot paths of
// streams/kafkajs.ts replaced) against a maintained peer, @platformatic/kafka, on the same broker
// and the same records, runs interleaved:
//   turnstream bench clients [--json] [--records 100000] [--partitions 3] [--pairs 3]
//
// - read: each client reads the topic from the beginning with a fresh group;
// - passthrough: each reads it and produces every record again (acks=all, idempotent, at least
//   once), the raw baseline of `bench streams` and `bench kstreams`;
// - eos: exactly once, as the processor runtime commits (every 20 ms, outputs and offsets in
//   transactions of at most 4,000 records; bench/eos-passthrough.ts), three ways: kafkajs with one
//   transactional producer for the instance (the runtime before it was fenced by partition: a
//   partition that moves mid-transaction can double), kafkajs with one per input partition (the
//   runtime now), and the peer with one producer whose offsets carry the group's generation
//   (KIP-447's TxnOffsetCommit; its consumer reads committed offsets without `require_stable`, so
//   a transaction still open when a partition moves is not waited for: that part of KIP-447 is
//   missing). Each reports its producers and its connections to the broker (counted in /proc).
// Each is timed from the first record the client hands over to the last (committed, for eos).
// kafkajs runs in this process (bench/support.ts); the peer runs in its own Node process from
// bench/kafka-clients, which is installed there on first use, apart from turnstream's
// dependencies. The figures are medians of the pairs; ratio is the peer's passthrough ÷ kafkajs';
// ratio_eos is kafkajs' fenced by partition ÷ fenced by instance.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchArgs } from './options.ts';
import { runCommand } from '../infra/index.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { benchFamily, createPlainTopic, median, rawConsume, rawPassthrough, rawProduce } from './support.ts';
import { brokerConnections, brokerPorts, peakOf } from './connections.ts';
import { eosPassthrough, type EosPassthroughResult } from './eos-passthrough.ts';

export const description =
  'kafkajs (as turnstream runs it) against @platformatic/kafka: read, consume → produce, and consume → produce exactly once (kafkajs fenced by instance and by partition), interleaved';

export const options: BenchOptions = {
  records: { default: '100000', min: 100, help: 'records of 1 KB' },
  partitions: { default: '3', help: 'partitions of the topics' },
  pairs: {
    default: '3',
    help: 'interleaved measured rounds (each: both clients read, pass the records on, and pass them on exactly once)',
  },
};

const PEER_DIR = fileURLToPath(new URL('./kafka-clients/', import.meta.url));
const PEER_PACKAGE = '@platformatic/kafka';

export interface ClientsBenchResult extends BenchResult {
  records: number;
  partitions: number;
  pairs: number;
  peer: string;
  /** Medians over the pairs, records per second. */
  kafkajs_read_msgs_per_s: number;
  peer_read_msgs_per_s: number;
  kafkajs_passthrough_msgs_per_s: number;
  peer_passthrough_msgs_per_s: number;
  /** The peer's read ÷ kafkajs' read (medians). */
  ratio_read: number;
  /** Exactly once, kafkajs with one transactional producer for the instance (the runtime before), medians. */
  kafkajs_eos_instance_msgs_per_s: number;
  /** Exactly once, kafkajs with one transactional producer per input partition (the runtime now), medians. */
  kafkajs_eos_partition_msgs_per_s: number;
  /** Exactly once, the peer with KIP-447's offset commit, one producer. */
  peer_eos_msgs_per_s: number;
  /** kafkajs fenced by partition ÷ by instance (medians). */
  ratio_eos: number;
  /** What each exactly-once instance held: transactional producers, and connections to the broker at the most (consumer included; null: not counted). */
  eos_costs: Record<
    'kafkajs_instance' | 'kafkajs_partition' | 'peer',
    { producers: number; connections: number | null; transactions: number }
  >;
  runs: Array<{
    kafkajs_read: number;
    peer_read: number;
    kafkajs_passthrough: number;
    peer_passthrough: number;
    kafkajs_eos_instance: number;
    kafkajs_eos_partition: number;
    peer_eos: number;
  }>;
}

/** Installs the peer client into bench/kafka-clients unless it is there already. */
async function ensurePeer(progress: (l: string) => void): Promise<string> {
  const installed = join(PEER_DIR, 'node_modules', ...PEER_PACKAGE.split('/'), 'package.json');
  if (!existsSync(installed)) {
    progress(`installing ${PEER_PACKAGE} into bench/kafka-clients`);
    await runCommand('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: PEER_DIR, what: `installing ${PEER_PACKAGE}` });
  }
  return `${PEER_PACKAGE} ${(JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version}`;
}

interface PeerResult {
  msgs_per_s: number;
  transactions: number;
  /** Its connections to the broker at the most; null where they cannot be counted. */
  connections: number | null;
}

/** One run of the peer in its own process. */
function peerRun(args: string[], ports: ReadonlySet<number>): Promise<PeerResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(PEER_DIR, 'peer.mjs'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const peak = peakOf(() => (child.pid === undefined ? null : brokerConnections(child.pid, ports)));
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-4000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.once('error', reject);
    child.once('close', (code, sig) => {
      clearTimeout(timer);
      const connections = peak.stop();
      const line = out.trim().split('\n').pop() ?? '';
      if (code === 0 && line.startsWith('{')) {
        const r = JSON.parse(line) as { msgs_per_s: number; transactions?: number };
        return resolve({ msgs_per_s: r.msgs_per_s, transactions: r.transactions ?? 0, connections });
      }
      reject(new Error(`the ${PEER_PACKAGE} peer failed (${sig ?? `exit ${code}`}):\n${err.trimEnd()}`));
    });
  });
}

export async function run({ config, options: given, progress }: BenchArgs): Promise<ClientsBenchResult> {
  const o = resolveOptions(options, given);
  const records = Number(o.records);
  const partitions = Number(o.partitions);
  const pairs = Number(o.pairs);
  const peer = await ensurePeer(progress);
  const family = await benchFamily(config, 'clients', partitions, []);
  try {
    const { kafka, prefix, endpoints } = family;
    const input = `${prefix}input`;
    await createPlainTopic(kafka, input, partitions);
    const value = Buffer.alloc(1024, 'x');
    const data = Array.from({ length: records }, (_, i) => ({ key: `session-${i % 1000}`, value }));
    progress(`producing ${records} records of 1 KB to ${partitions} partitions`);
    await rawProduce(kafka, input, data);
    const ports = brokerPorts(endpoints.brokers);
    const runs: ClientsBenchResult['runs'] = [];
    const costs: Partial<ClientsBenchResult['eos_costs']> = {};
    const costOf = (r: EosPassthroughResult | PeerResult, producers: number) => ({
      producers,
      connections: r.connections,
      transactions: r.transactions,
    });
    for (let p = 0; p < pairs; p++) {
      const id = `${prefix}r${p}`;
      const kafkajsRead = records / (await rawConsume(kafka, input, records, `${id}-kafkajs-read`));
      const peerRead = (await peerRun(['read', endpoints.brokers, input, String(records), `${id}-peer-read`], ports)).msgs_per_s;
      const kafkajsPass = records / (await rawPassthrough(kafka, input, `${id}-kafkajs-out`, records, `${id}-kafkajs-pass`, partitions));
      await createPlainTopic(kafka, `${id}-peer-out`, partitions);
      const peerPass = (await peerRun(['pass', endpoints.brokers, input, String(records), `${id}-peer-pass`, `${id}-peer-out`], ports))
        .msgs_per_s;
      const eos = async (fencing: 'instance' | 'partition') => {
        await createPlainTopic(kafka, `${id}-eos-${fencing}-out`, partitions);
        const r = await eosPassthrough(kafka, input, `${id}-eos-${fencing}-out`, records, `${id}-eos-${fencing}`, fencing, ports);
        costs[`kafkajs_${fencing}`] = costOf(r, r.producers);
        return Math.round(records / r.seconds);
      };
      // Alternating which goes first, so neither always runs on a warmer broker.
      const [first, second] = p % 2 === 0 ? (['instance', 'partition'] as const) : (['partition', 'instance'] as const);
      const eosFirst = await eos(first);
      const eosSecond = await eos(second);
      await createPlainTopic(kafka, `${id}-peer-eos-out`, partitions);
      const peerEos = await peerRun(['eos', endpoints.brokers, input, String(records), `${id}-peer-eos`, `${id}-peer-eos-out`], ports);
      costs.peer = costOf(peerEos, 1);
      const r = {
        kafkajs_read: Math.round(kafkajsRead),
        peer_read: peerRead,
        kafkajs_passthrough: Math.round(kafkajsPass),
        peer_passthrough: peerPass,
        kafkajs_eos_instance: first === 'instance' ? eosFirst : eosSecond,
        kafkajs_eos_partition: first === 'partition' ? eosFirst : eosSecond,
        peer_eos: peerEos.msgs_per_s,
      };
      runs.push(r);
      progress(`pair ${p + 1}/${pairs}: ${JSON.stringify(r)}`);
    }
    const m = (k: keyof ClientsBenchResult['runs'][number]) => median(runs.map((r) => r[k]));
    return {
      baseline: 'kafkajs 2.2.4 as turnstream runs it (streams/kafkajs.ts), in the same run, interleaved',
      records,
      partitions,
      pairs,
      peer,
      kafkajs_read_msgs_per_s: m('kafkajs_read'),
      peer_read_msgs_per_s: m('peer_read'),
      kafkajs_passthrough_msgs_per_s: m('kafkajs_passthrough'),
      peer_passthrough_msgs_per_s: m('peer_passthrough'),
      ratio: Number((m('peer_passthrough') / m('kafkajs_passthrough')).toFixed(2)),
      ratio_read: Number((m('peer_read') / m('kafkajs_read')).toFixed(2)),
      kafkajs_eos_instance_msgs_per_s: m('kafkajs_eos_instance'),
      kafkajs_eos_partition_msgs_per_s: m('kafkajs_eos_partition'),
      peer_eos_msgs_per_s: m('peer_eos'),
      ratio_eos: Number((m('kafkajs_eos_partition') / m('kafkajs_eos_instance')).toFixed(2)),
      eos_costs: costs as ClientsBenchResult['eos_costs'],
      runs,
    };
  } finally {
    await family.cleanup();
  }
}
