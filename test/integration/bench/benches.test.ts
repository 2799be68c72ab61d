/**
 * Every benchmark at toy size on the real stack: it declares its options, reports a baseline
 * measured in the same run and a ratio, and leaves no topic, consumer group, schema subject or
 * temp folder behind. (No timing is asserted: figures are measured, not tested.)
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { createKafka } from '../../../streams/index.ts';
import { availableBenches } from '../../../bench/index.ts';
import type { BenchArgs } from '../../../bench/options.ts';
import { loadConfig } from '../../../cli/config.ts';
import type { BenchOptions, BenchResult } from '../../../bench/options.ts';
import type { CpuPhase } from '../../../bench/cpu.ts';
import type { AvroCost } from '../../../bench/pipeline-codecs.ts';
import { stackPids } from '../../../infra/index.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';

interface BenchModule {
  description: string;
  options: BenchOptions;
  run: (args: BenchArgs) => Promise<BenchResult & Record<string, unknown>>;
}

const load = async (name: string): Promise<BenchModule> => (await import(`../../../bench/${name}.ts`)) as BenchModule;

/** Toy sizes: each bench in seconds. */
const TOY: Record<string, Record<string, string>> = {
  cli: { runs: '3' },
  streams: { records: '200' },
  kstreams: { records: '200', pairs: '1', warmups: '1' },
  clients: { records: '300', pairs: '1' },
  gateway: { clients: '1', seconds: '1', rounds: '1', 'max-tokens': '2' },
  pipeline: { sessions: '10', turns: '2', 'live-sessions': '2', 'grace-ms': '0' },
  replay: { turns: '40', 'turns-per-session': '4' },
  sink: { users: '1', rounds: '2', 'max-buffered': '300' },
  trainer: { steps: '1', batch: '2', backends: 'wasm,cpu' },
  model: { model: 'tiny', tokens: '16,32', steps: '1', rounds: '1', 'gen-tokens': '8', backends: 'tensorflow,wasm', ttft: '128,256' },
  weights: { model: 'tiny', rounds: '1', rank: '4', 'chunk-kib': '4' },
  parallel: { model: 'tiny', parallel: '2', prompts: '4', 'max-tokens': '8', threads: '2' },
};

describe('benchmarks', { timeout: 900_000 }, () => {
  let stack: Awaited<ReturnType<typeof ensureStack>>;
  let prefix: string;
  let config: ReturnType<typeof loadConfig>;
  before(async () => {
    stack = await ensureStack();
    prefix = uniquePrefix('benches');
    config = loadConfig(
      {
        KAFKA_BROKERS: stack.brokers,
        SCHEMA_REGISTRY_URL: stack.registryUrl,
        CLICKHOUSE_URL: stack.clickhouseUrl,
        TURNSTREAM_TOPIC_PREFIX: prefix,
      },
      REPO_ROOT,
    );
  });

  /** What the run left behind under its prefix: topics, groups, subjects. */
  async function leftovers(): Promise<string[]> {
    const kafka = createKafka({ brokers: [stack.brokers], clientId: 'bench-leftovers' });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
      const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
      const subjects = ((await (await fetch(`${stack.registryUrl}/subjects`)).json()) as string[]).filter((s) => s.startsWith(prefix));
      return [...topics, ...groups, ...subjects];
    } finally {
      await admin.disconnect();
    }
  }
  const tempDirs = () => readdirSync(tmpdir()).filter((d) => d.startsWith('bench-')).length;

  it('every benchmark declares a description and its options, with valid defaults', async () => {
    assert.deepEqual(availableBenches().sort(), Object.keys(TOY).sort(), 'each benchmark has a toy size here');
    for (const name of availableBenches()) {
      const m = await load(name);
      assert.ok(m.description.length > 20, `${name} describes itself`);
      assert.ok(Object.keys(m.options).length > 0, `${name} declares its options`);
      for (const o of Object.values(m.options)) assert.ok(o.help && o.default !== undefined);
    }
  });

  for (const name of Object.keys(TOY)) {
    it(`bench ${name}: a baseline in the same run, a ratio, and nothing left behind`, async () => {
      const before = tempDirs();
      const m = await load(name);
      const r = await m.run({ config, options: TOY[name], progress: () => {} });
      assert.ok(typeof r.baseline === 'string' && r.baseline.length > 10, `${name} says what its baseline is`);
      assert.ok(Number.isFinite(r.ratio) && r.ratio > 0, `${name} ratio ${r.ratio}`);
      assert.deepEqual(await leftovers(), [], `${name} deleted its topics, groups and subjects`);
      assert.ok(tempDirs() <= before, `${name} removed its temp folders`);
      if (name === 'sink' || name === 'pipeline' || name === 'replay') {
        // Where the CPU went: this process and the local stack's services, each phase, and how busy the machine was.
        const cpu = r.cpu as Record<string, number | CpuPhase>;
        assert.equal(cpu.cores, availableParallelism());
        const phases = Object.values(cpu).filter((p): p is CpuPhase => typeof p === 'object');
        assert.equal(phases.length, name === 'replay' ? 3 : 2);
        for (const p of phases) {
          assert.ok(p.seconds.bench > 0, `${name}: CPU of this process, ${JSON.stringify(p)}`);
          // The stack's services are counted when they run here (not in containers or elsewhere); at
          // toy size their share may be under the kernel's 10 ms tick.
          if (stackPids({ home: config.home }).kafka !== undefined) assert.ok(p.seconds.kafka! >= 0, `${name}: CPU of Kafka`);
          assert.ok(Math.abs(p.total - Object.values(p.seconds).reduce((a, b) => a + b, 0)) < 0.05);
          assert.ok(p.machine_busy > 0 && p.wall > 0);
        }
      }
      if (name === 'cli') {
        // Wall time, peak RSS and CPU time of each command and of node -e 0, and whether each target is met.
        for (const k of ['baseline_s', 'help_s', 'doctor_s', 'up_help_s', 'help_rss_mb', 'doctor_rss_mb', 'help_cpu_s', 'baseline_cpu_s'])
          assert.ok(Number(r[k]) > 0, `${k} ${r[k]}`);
        assert.ok(Number(r.help_rss_mb) > Number(r.baseline_rss_mb), 'the command takes more memory than node -e 0');
        assert.deepEqual(Object.keys(r.met as object), ['help_s', 'doctor_s', 'help_rss_mb']);
      }
      if (name === 'weights') {
        // Both gateways served the version published for them; the adapter went through Kafka in pieces.
        assert.ok(Number(r.kafka_s) > 0 && Number(r.file_s) > 0 && Number(r.fetch_s) > 0);
        assert.equal(r.pieces, Math.ceil(Number(r.adapter_bytes) / 4096) + 1, 'the adapter in 4 KiB pieces, and its manifest');
        assert.deepEqual((r.per_round as Array<{ round: number; transport: string }>).map((x) => `${x.round}:${x.transport}`).sort(), [
          '0:file',
          '0:kafka',
          '1:file',
          '1:kafka',
        ]);
      }
      if (name === 'sink') {
        // The baseline repeats the sink's own inserts: same count, same sizes.
        assert.ok(Number(r.inserts) >= 1);
        assert.equal(r.mean_rows_per_insert, Math.round(Number(r.rows) / Number(r.inserts)));
        assert.equal((r.ratio_per_round as number[]).length, 2, 'one ratio per round');
        assert.equal(r.max_buffered_rows, 300, 'the sink ran with the buffer asked for');
        assert.ok(Number(r.read_rows_per_s) > 0 && Number(r.read_decode_rows_per_s) > 0, 'the Kafka-side ceilings');
      }
      if (name === 'replay') {
        // The floor re-produces exactly what the replay wrote: a pair and a judgement per turn, and its samples.
        assert.equal(r.output_records, Number(r.pairs) + Number(r.judgements) + Number(r.samples));
        assert.ok(Number(r.produce_floor_seconds) >= 0 && Number(r.floor_share) >= 0);
        assert.ok(Number(r.produce_floor_stock_kafkajs_seconds) > 0, 'the floor on stock kafkajs too');
      }
      if (name === 'model') {
        // The step on native TensorFlow against the PyTorch peer, per size, and the scoring pass against llama.cpp.
        assert.equal(r.backend, 'tensorflow');
        const peer = r.peer as { name: string; lora_step_s: Record<string, number> };
        assert.match(peer.name, /^pytorch .* \+ peft /);
        for (const T of ['16', '32']) {
          assert.ok((r.lora_step_s as Record<string, number>)[T] > 0 && peer.lora_step_s[T] > 0, `step at ${T}`);
          assert.ok((r.ratio_step as Record<string, number>)[T] > 0 && (r.ratio_forward as Record<string, number>)[T] > 0);
        }
        assert.ok(Number(r.peak_rss_mb) > 0);
        const wasm = (r.tfjs as Array<{ backend: string; available: boolean }>).find((b) => b.backend === 'wasm');
        assert.equal(wasm?.available, true, 'the fallback measured too');
        // Time to first token: the gateway against bare node-llama-cpp on the same token ids, per length.
        const [ttft, peerTtft, ratioTtft, promptTokens] = ['ttft_s', 'peer_ttft_s', 'ratio_ttft', 'ttft_prompt_tokens'].map(
          (k) => r[k] as Record<string, number>,
        );
        for (const n of ['128', '256']) {
          assert.ok(ttft[n] > 0 && peerTtft[n] > 0, `time to first token at ${n}`);
          assert.equal(ratioTtft[n], Number((peerTtft[n] / ttft[n]).toFixed(3)));
          assert.ok(promptTokens[n] <= Number(n) && promptTokens[n] > Number(n) * 0.9, `a prompt of about ${n} tokens: ${promptTokens[n]}`);
        }
        // The session's second turn reuses its first turn's prompt (the prefix cache), and a new session its system prompt.
        assert.ok(Number(r.first_turn_s) > 0 && Number(r.second_turn_s) > 0);
        assert.ok(Number(r.second_turn_cached_tokens) >= promptTokens['256'] - 1, `second turn: ${r.second_turn_cached_tokens} cached`);
        assert.ok(Number(r.same_system_new_session_cached_tokens) > promptTokens['256'] / 2);
      }
      if (name === 'parallel') {
        // Each layout answered every prompt; the default layout's answers are those given alone.
        const tps = r.tokens_per_s as Record<string, number>;
        for (const k of ['separate', 'shared', 'alone']) assert.ok(tps[k] > 0, `${k} tokens/s`);
        assert.equal((r.same_as_alone as Record<string, number>).separate, 4);
        assert.equal(r.ratio, Number((tps.separate / tps.shared).toFixed(3)));
      }
      if (name === 'clients') {
        // Both clients read every record and passed every record on, in the same pair.
        assert.equal(r.peer, '@platformatic/kafka 2.12.1');
        const [pair] = r.runs as Array<Record<string, number>>;
        for (const k of ['kafkajs_read', 'peer_read', 'kafkajs_passthrough', 'peer_passthrough']) assert.ok(pair[k] > 0, k);
      }
      if (name === 'pipeline') {
        assert.ok(Number(r.raw_stock_kafkajs_msgs_per_s) > 0, 'the raw passthrough on stock kafkajs too');
        assert.ok(Number(r.raw_chain_msgs_per_s) > 0 && Number(r.raw_chain_ratio) > 0, 'the three-hop chain floor');
        // Avro's share, from the backlog's own records: one state, pair, judgement and sample per turn here.
        const avro = r.avro as AvroCost;
        assert.deepEqual(new Set(Object.values(avro.records)), new Set([r.turns]));
        assert.ok(avro.us_per_turn > 0 && Object.values(avro.encode_us).every((us) => us > 0));
      }
    });
  }

  it('bench pipeline --processes 1: each processor in a process of its own, every sample made, nothing left behind', async () => {
    const m = await load('pipeline');
    const r = await m.run({ config, options: { ...TOY.pipeline, processes: '1' }, progress: () => {} });
    assert.equal(r.samples, r.turns);
    // Each stage's process is counted on its own.
    const pipeline = (r.cpu as { pipeline: CpuPhase }).pipeline;
    for (const stage of ['session-assembler', 'judge', 'sample-builder']) assert.ok(pipeline.seconds[stage]! >= 0, stage);
    assert.ok(Number(r.turns_per_s) > 0 && Number(r.ratio) > 0);
    assert.deepEqual(await leftovers(), []);
  });

  after(async () => {
    assert.deepEqual(await leftovers(), []);
  });
});
