/**
 * The faults of `turnstream chaos`, each injected mid-traffic: kill -9 of the broker, the
 * gateway, each processor and the trainer; ClickHouse and the registry stopped for a while;
 * corrupt records; an oversized turn; 200 slow streaming readers. The scale events of
 * `chaos --cluster` (groups scaled, partitions moved, brokers killed) are in cluster.ts.
 */
import { readFileSync } from 'node:fs';
import type { Kafka } from 'kafkajs';
import { stackPids, stackUp, type StackOptions } from '../../infra/index.ts';
import type { Supervisor } from '../../infra/index.ts';
import type { EventCodecs } from '../../streams/index.ts';
import { chatCall, slowReaders, type SlowReadersResult } from './load.ts';

export interface FaultContext {
  stack: StackOptions;
  supervisor: Supervisor;
  kafka: Kafka;
  codecs: EventCodecs;
  gatewayUrl: string;
  /** Every gateway (`chaos --cluster` runs two); the first is `gatewayUrl`. */
  gatewayUrls: string[];
  /** How the load spreads over the gateways (LoadOptions.affinity). */
  affinity: 'session' | 'none';
  /** The scenario's session prefix. */
  prefix: string;
  /** Seconds a stopped dependency stays down. */
  downSeconds: number;
  progress: (line: string) => void;
}

/** What a fault left to report (beyond the common counts). */
export type FaultDetails = Record<string, number | string | boolean>;

export interface Scenario {
  name: string;
  /** Injects the fault; resolves once it is injected (and, for a stop, undone). Returns details to report. */
  inject(ctx: FaultContext): Promise<FaultDetails>;
  /** Runs alongside the load from the fault on; resolves with details when done. */
  during?: (ctx: FaultContext) => Promise<FaultDetails>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitDead(pid: number): Promise<void> {
  for (let t0 = Date.now(); Date.now() - t0 < 30_000; await sleep(100)) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  throw new Error(`pid ${pid} did not exit`);
}

/** kill -9 of a service the supervisor runs; it restarts it. */
export function killService(service: string): Scenario {
  return {
    name: `kill -9 ${service}`,
    async inject(ctx) {
      const pid = ctx.supervisor.states().find((s) => s.name === service)?.pid;
      if (!pid) throw new Error(`${service} is not running`);
      process.kill(pid, 'SIGKILL');
      await waitDead(pid);
      ctx.progress(`  killed ${service} (pid ${pid}); the supervisor restarts it`);
      return {};
    },
  };
}

/** A dependency of the stack killed or stopped, then started again after `downSeconds`. */
function stopDependency(which: 'kafka' | 'registry' | 'clickhouse', signal: 'SIGKILL' | 'SIGTERM'): Scenario {
  const label = { kafka: 'the broker', registry: 'the registry', clickhouse: 'ClickHouse' }[which];
  return {
    name: signal === 'SIGKILL' ? `kill -9 ${label}` : `stop ${label}`,
    async inject(ctx) {
      const pid = stackPids(ctx.stack)[which];
      if (!pid) throw new Error(`${which} is not running`);
      process.kill(pid, signal);
      await waitDead(pid);
      ctx.progress(`  ${signal === 'SIGKILL' ? 'killed' : 'stopped'} ${label} (pid ${pid}); back in ${ctx.downSeconds} s`);
      await sleep(ctx.downSeconds * 1000);
      const t0 = Date.now();
      await stackUp({ ...ctx.stack, onProgress: undefined });
      ctx.progress(`  ${label} is back (${((Date.now() - t0) / 1000).toFixed(1)} s to start)`);
      return { down_s: ctx.downSeconds };
    },
  };
}

const corruptRecords: Scenario = {
  name: 'corrupt records',
  async inject(ctx) {
    const producer = ctx.kafka.producer();
    await producer.connect();
    const junk = (topic: string, n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({
        key: `${ctx.prefix}junk-${tag}-${i}`,
        value: i % 3 === 0 ? Buffer.from([0, 0, 1, 134, 159, 1, 2, 3]) : Buffer.from(`not avro ${i}`),
      }));
    await producer.send({ topic: ctx.codecs.topic('turns'), messages: junk('turns', 20, 'turns') });
    await producer.send({ topic: ctx.codecs.topic('feedback'), messages: junk('feedback', 10, 'feedback') });
    await producer.disconnect();
    ctx.progress('  wrote 30 corrupt records (not Avro, unknown schema ids) into turns and feedback');
    return { corrupt_sent: 30 };
  },
};

const oversizedTurn: Scenario = {
  name: 'oversized turn (3 MB)',
  async inject(ctx) {
    const r = await chatCall(
      ctx.gatewayUrl,
      { messages: [{ role: 'user', content: `big ${'x'.repeat(3_000_000)}` }], max_tokens: 4 },
      { 'x-session-id': `${ctx.prefix}big`, 'idempotency-key': `${ctx.prefix}big` },
    );
    ctx.progress(`  a 3,000,000-character message: ${r ? `answered in ${r.ms} ms` : 'not answered'}`);
    return { oversized_answered: r !== null };
  },
};

/** 200 slow streaming readers with the gateway's RSS sampled throughout (the caller compares with normal calls' latency). */
function slowReadersScenario(n: number): Scenario {
  let result: SlowReadersResult | null = null;
  return {
    name: `${n} slow readers`,
    async inject() {
      return {};
    },
    async during(ctx) {
      const pid = ctx.supervisor.states().find((s) => s.name === 'gateway')?.pid;
      const rss = (): number => {
        try {
          const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          return m ? Number(m[1]) / 1024 : 0;
        } catch {
          return 0;
        }
      };
      // A normal request, one at a time from a user of its own: its latency just before the
      // burst (the baseline, same run) and during it.
      const normal = async (tag: string, more: (k: number) => boolean): Promise<number[]> => {
        const ms: number[] = [];
        for (let k = 0; more(k); k++) {
          const r = await chatCall(
            ctx.gatewayUrl,
            { messages: [{ role: 'user', content: `hello ${k}` }], max_tokens: 12 },
            { 'x-session-id': `${ctx.prefix}normal-${tag}-${k}`, 'x-user-id': `${ctx.prefix}normal` },
          );
          if (r) ms.push(r.ms);
        }
        return ms.sort((a, b) => a - b);
      };
      const p99 = (xs: number[]): number => xs[Math.min(xs.length - 1, Math.ceil(0.99 * xs.length) - 1)] ?? Number.NaN;
      const before = await normal('before', (k) => k < 20);
      const baseline = rss();
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, rss())), 100);
      const holdMs = 20_000;
      let bursting = true;
      const [burst, during] = await Promise.all([
        slowReaders(ctx.gatewayUrl, n, holdMs, `${ctx.prefix}slow`).finally(() => (bursting = false)),
        normal('during', () => bursting),
      ]);
      result = burst;
      clearInterval(sampler);
      ctx.progress(
        `  ${n} slow readers: ${result.held} streams held, ${result.rejected} answered 429; RSS ${baseline.toFixed(0)} → peak ${peak.toFixed(0)} MB; a normal call's p99 ${p99(before)} ms before, ${p99(during)} ms during (${during.length} calls)`,
      );
      return {
        slow_held: result.held,
        slow_429: result.rejected,
        rss_baseline_mb: Math.round(baseline),
        rss_peak_mb: Math.round(peak),
        rss_growth_mb: Math.round(peak - baseline),
        normal_p99_before_ms: p99(before),
        normal_p99_ms: p99(during),
        normal_calls: during.length,
      };
    },
  };
}

/** Every scenario, in the order they run. */
export function scenarios(): Scenario[] {
  return [
    { name: 'no fault (baseline)', inject: async () => ({}) },
    stopDependency('kafka', 'SIGKILL'),
    killService('gateway'),
    killService('session-assembler'),
    killService('judge'),
    killService('sample-builder'),
    killService('trainer'),
    killService('clickhouse-sink'),
    stopDependency('clickhouse', 'SIGTERM'),
    stopDependency('registry', 'SIGTERM'),
    corruptRecords,
    oversizedTurn,
    slowReadersScenario(200),
  ];
}
