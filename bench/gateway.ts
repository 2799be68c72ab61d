// The gateway with capture on (every call a Turn event: outbox → Kafka) against capture off
// (serving only), in one run, same process, same built-in policy (the shipped base):
//   turnstream bench gateway [--json] [--clients 8] [--seconds 10] [--rounds 2] [--max-tokens 16]
//
// Rounds alternate on, off, on, off… so drift (other load on the machine) falls on both.
// - req_per_s, latency p50/p99 (ms) per mode: `clients` concurrent non-streamed chats, each a
//   session of its own, fixed prompt, `max_tokens` tokens (the base model may stop earlier).
// - ratio: req/s with capture on ÷ off.
// - tokens_per_s: completion tokens the built-in policy generated per second, all rounds.
// - turns_on_topic: Turn events that reached Kafka (read_committed) = calls made with capture
//   on, checked after the outbox drained.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchArgs } from './options.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import type { Gateway } from '../gateway/index.ts';
import { gatewayService, ownGateway } from '../stack/index.ts';
import { parseBrokers, readToEnd } from '../streams/index.ts';
import { createLogger } from '../core/index.ts';
import { benchFamily, quantile, sleep } from './support.ts';

interface ModeFigures {
  requests: number;
  req_per_s: number;
  latency_ms: { p50: number; p99: number };
  tokens_per_s: number;
}

export const description = 'the gateway (built-in model) with turn capture on (outbox → Kafka) against capture off, in alternating rounds';

export const options: BenchOptions = {
  clients: { default: '8', help: 'concurrent clients, each a session of its own' },
  seconds: { default: '10', help: 'seconds per round and mode' },
  rounds: { default: '2', help: 'rounds of (on, off)' },
  'max-tokens': { default: '16', help: 'max_tokens of each call' },
};

export interface GatewayBenchResult extends BenchResult {
  clients: number;
  seconds_per_round: number;
  rounds: number;
  max_tokens: number;
  capture_on: ModeFigures;
  capture_off: ModeFigures;
  /** capture_on.req_per_s / capture_off.req_per_s */
  ratio: number;
  /** Completion tokens per second over every round. */
  tokens_per_s: number;
  /** Calls answered with capture on, warm-up included. */
  calls_with_capture: number;
  /** Turn events that reached Kafka; equal to calls_with_capture when nothing is lost or doubled. */
  turns_on_topic: number;
  failed_requests: number;
}

interface Tally {
  latencies: number[];
  tokens: number;
  seconds: number;
  failed: number;
}

async function load(url: string, clients: number, seconds: number, maxTokens: number, tag: string, into: Tally): Promise<void> {
  const until = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      let i = 0;
      while (performance.now() < until) {
        const start = performance.now();
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-session-id': `bench-${tag}-${c}-${i++}` },
          body: JSON.stringify({ messages: [{ role: 'user', content: 'How do I make tea?' }], max_tokens: maxTokens, temperature: 0.7 }),
        });
        const body = (await res.json()) as { usage?: { completion_tokens: number } };
        if (res.status !== 200) {
          into.failed++;
          continue;
        }
        into.latencies.push(performance.now() - start);
        into.tokens += body.usage?.completion_tokens ?? 0;
      }
    }),
  );
  into.seconds += (performance.now() - t0) / 1000;
}

function figures(t: Tally): ModeFigures {
  const sorted = [...t.latencies].sort((a, b) => a - b);
  return {
    requests: t.latencies.length,
    req_per_s: Number((t.latencies.length / t.seconds).toFixed(2)),
    latency_ms: { p50: Math.round(quantile(sorted, 0.5)), p99: Math.round(quantile(sorted, 0.99)) },
    tokens_per_s: Math.round(t.tokens / t.seconds),
  };
}

export async function run(args: BenchArgs): Promise<GatewayBenchResult> {
  const { config, progress } = args;
  const o = resolveOptions(options, args.options);
  const clients = Number(o.clients);
  const seconds = Number(o.seconds);
  const rounds = Number(o.rounds);
  const maxTokens = Number(o['max-tokens']);
  const family = await benchFamily(config, 'gateway', 3, ['turns', 'feedback', 'weights']);
  const { endpoints, prefix, kafka, codecs } = family;
  const home = await mkdtemp(join(tmpdir(), 'bench-gateway-'));
  const logger = createLogger('bench-gateway', 'warn');
  const weightsDir = join(home, 'weights');
  // Both built as `turnstream gateway`'s, on the built-in model; one records every turn on the bench's topics, one records nothing.
  const served = { kind: 'builtin' as const, modelId: 'turnstream-tiny' };
  const own = (dir: string) => ({ ...ownGateway(join(home, dir), logger), builtin: { weightsDir, followWeights: false } });
  const on: Gateway = gatewayService(config, served, {
    ...own('on'),
    kafka: { brokers: parseBrokers(endpoints.brokers), registryUrl: endpoints.registryUrl, naming: { prefix } },
    shareSessions: false,
  });
  const off: Gateway = gatewayService(config, served, { ...own('off'), kafka: undefined, capture: false });
  const tallies = {
    on: { latencies: [], tokens: 0, seconds: 0, failed: 0 } as Tally,
    off: { latencies: [], tokens: 0, seconds: 0, failed: 0 } as Tally,
  };
  try {
    const onUrl = await on.start();
    const offUrl = await off.start();
    progress(`warm-up (both gateways, ${clients} clients)`);
    const warm: Tally = { latencies: [], tokens: 0, seconds: 0, failed: 0 };
    await load(onUrl, clients, 2, maxTokens, 'warm-on', warm);
    const warmOn = warm.latencies.length;
    await load(offUrl, clients, 2, maxTokens, 'warm-off', warm);
    for (let r = 0; r < rounds; r++) {
      progress(`round ${r + 1}/${rounds}: capture on, ${seconds} s`);
      await load(onUrl, clients, seconds, maxTokens, `on${r}`, tallies.on);
      progress(`round ${r + 1}/${rounds}: capture off, ${seconds} s`);
      await load(offUrl, clients, seconds, maxTokens, `off${r}`, tallies.off);
    }
    const made = warmOn + tallies.on.latencies.length;
    const deadline = Date.now() + 60_000;
    while (on.outbox.depth > 0 && Date.now() < deadline) await sleep(100);
    let turns = 0;
    await readToEnd(kafka, codecs.topic('turns'), () => void turns++);
    progress(`${turns} Turn events on the topic for ${made} calls with capture on (warm-up included)`);
    const onF = figures(tallies.on);
    const offF = figures(tallies.off);
    const all = tallies.on.tokens + tallies.off.tokens;
    return {
      clients,
      seconds_per_round: seconds,
      rounds,
      max_tokens: maxTokens,
      capture_on: onF,
      capture_off: offF,
      baseline: 'the same gateway with capture off (serving only), rounds alternating with capture on',
      ratio: Number((onF.req_per_s / offF.req_per_s).toFixed(4)),
      tokens_per_s: Math.round(all / (tallies.on.seconds + tallies.off.seconds)),
      calls_with_capture: made,
      turns_on_topic: turns,
      failed_requests: tallies.on.failed + tallies.off.failed + warm.failed,
    };
  } finally {
    await on.stop();
    await off.stop();
    await rm(home, { recursive: true, force: true });
    await family.cleanup();
  }
}
