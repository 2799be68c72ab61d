/**
 * `turnstream chaos`: a fault suite anyone can run. It starts a stack of its own (Kafka,
 * registry, ClickHouse on free ports, in a throw-away TURNSTREAM_HOME) and every service under
 * the supervisor `turnstream up` uses (gateway on the built-in tiny model, the three
 * processors, the trainer, the ClickHouse sink), then runs each scenario: conversations under
 * load, the fault injected a third of the way in, probe calls every second from the fault on.
 *
 * Per scenario it counts, for the scenario's own sessions:
 * - answered: calls answered 200 (a client retries through a fault with the same
 *   Idempotency-Key, so a retried call keeps its turn id);
 * - turns / distinct / duplicates: records on the turns topic, distinct turn ids, and the extra
 *   copies (a call answered twice, an outbox batch re-sent: downstream dedupes them);
 * - pairs, judgements, samples (distinct ids on their topics) and ClickHouse rows (turns, FINAL);
 * - lost: answered turns missing from the turns topic or ClickHouse, turns without a pair, pairs
 *   without a judgement or a dead letter;
 * - doubled: an id counted twice where it must be once (pairs, judgements, samples, ClickHouse);
 * - recover_s: seconds from the fault until a call made after it is in ClickHouse (end to end);
 *   the baseline's is the pipeline's normal latency.
 * It passes when every scenario has lost 0 and doubled 0, weight versions are consecutive, and
 * during the slow readers a normal call (one at a time, from a user of its own) has a p99 under
 * 1 s; the same calls just before the burst are its baseline.
 *
 * With `cluster` the stack has three brokers and the services run as on several hosts (two
 * gateways with homes of their own, three instances of each processor, the trainer's versions
 * through Kafka), and the scenarios are the scale events of bench/chaos/cluster.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { AnalyticsStore } from '../../warehouse/index.ts';
import {
  distinctFreePorts,
  freePortBlock,
  stackDown,
  stackUp,
  type StackOptions,
  type StackUpResult,
  type Supervisor,
} from '../../infra/index.ts';
import { createKafka, parseBrokers, waitForDependencies, type EventCodecs } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { Observer } from './observe.ts';
import { runScenario, type ScenarioResult } from './run-scenario.ts';
import { scenarios, type FaultContext, type Scenario } from './scenarios.ts';
import { ClusterServices, clusterScenarios, INSTANCES } from './cluster.ts';
import { chaosSupervisor, initWeights, serviceEnv, startServices } from './services.ts';

export type { ScenarioResult } from './run-scenario.ts';

export interface ChaosOptions {
  /** Calls per scenario (conversations of 4 turns). @default 60 */
  calls?: number;
  /** Run only the scenarios whose name contains one of these. @default all */
  only?: string[];
  /** Where the Kafka jars and Apicurio app are (shared with other homes). @default the home */
  distDir?: string;
  /** Seconds a stopped dependency stays down. @default 10 */
  downSeconds?: number;
  /** Run the selected scenarios this many times over (a rare fault shows up). @default 1 */
  repeat?: number;
  /** Leave the stack and the home (for a look at the logs). @default false */
  keep?: boolean;
  /** Three brokers, two gateways on homes of their own, three instances of each processor, and the scale events as scenarios. @default false */
  cluster?: boolean;
  /** How the clients spread over the gateways (LoadOptions.affinity). @default 'session' */
  affinity?: 'session' | 'none';
  progress?: (line: string) => void;
}

export interface ChaosResult {
  ok: boolean;
  home: string;
  scenarios: ScenarioResult[];
  weight_versions: number;
  weight_versions_consecutive: boolean;
  /** With `cluster`: what ran. */
  cluster?: { brokers: number; gateways: number; instances_per_processor: number; affinity: 'session' | 'none' };
  seconds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the fault suite (see the module comment) and stops what it started, also on Ctrl-C. */
export async function runChaos(o: ChaosOptions = {}): Promise<ChaosResult> {
  const t0 = Date.now();
  const say = o.progress ?? (() => undefined);
  const { home, stack, up, gatewayPorts } = await startStack(o, say);
  const running: { supervisor?: Supervisor } = {};
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      await running.supervisor?.stopAll();
      if (!o.keep) {
        await stackDown(stack);
        rmSync(home, { recursive: true, force: true });
      }
    })());
  const release = stopOnSignals(cleanup, say);
  const results: ScenarioResult[] = [];
  let versions: number[] = [];
  // Whatever fails from here on (the registry, init-weights, a service that never comes up), the
  // services and the stack this run started are stopped, as at its end.
  try {
    const logger = createLogger('chaos', 'error');
    const kafka = createKafka({ brokers: parseBrokers(up.brokers), clientId: 'chaos', logger, security: up.security.kafka });
    const codecs = await waitForDependencies({
      kafka,
      brokers: up.brokers,
      registryUrl: up.registryUrl,
      registrySecurity: up.security.registry,
      logger,
    });
    const env = serviceEnv(home, up, gatewayPorts[0]!);
    // With two gateways and no affinity a session's turns can be read out of order; the
    // assembler's default grace (5 s) is what lets a late one still slot in.
    if (o.cluster) env.FEEDBACK_GRACE_MS = '5000';
    const cluster = o.cluster ? new ClusterServices(home, gatewayPorts) : undefined;
    const gatewayUrls = cluster?.gatewayUrls ?? [`http://127.0.0.1:${gatewayPorts[0]}`];
    // Version 0 (the shipped base) on each home that needs one: the trainer's, and the
    // processors' (the sample builder's teacher is the served model). Gateways make their own.
    await initWeights(env);
    if (cluster) await initWeights({ ...env, TURNSTREAM_HOME: cluster.homeOf('trainer-a') });
    const supervisor = (running.supervisor = chaosSupervisor(home, env, say));
    if (cluster) await cluster.start(supervisor);
    else await startServices(supervisor, gatewayUrls[0]!, home);
    say('chaos: every service is up');
    const store = new AnalyticsStore({ url: up.clickhouseUrl, ...up.security.clickhouse });
    const observer = await Observer.start(kafka, codecs, store, logger);

    try {
      const list = cluster ? clusterScenarios(cluster, observer) : scenarios();
      const shared = { stack, supervisor, kafka, codecs, gatewayUrl: gatewayUrls[0]!, gatewayUrls };
      await runScenarios(o, list, shared, observer, results);
      // The trainer's versions settle last: wait until it has nothing left to publish.
      await sleep(5000);
    } finally {
      versions = [...observer.seen.weights.values()].map((w) => w.version).sort((a, b) => a - b);
      await observer.stop();
      await store.close();
    }
  } finally {
    await cleanup();
    release();
  }
  const layout = o.cluster
    ? { brokers: 3, gateways: gatewayPorts.length, instances_per_processor: INSTANCES, affinity: o.affinity ?? 'session' }
    : undefined;
  return { ...verdict(home, results, versions, t0), ...(layout ? { cluster: layout } : {}) };
}

/** A stack of the run's own: a throw-away home, free ports (and one for the gateway). */
async function startStack(
  o: ChaosOptions,
  say: (line: string) => void,
): Promise<{ home: string; stack: StackOptions; up: StackUpResult; gatewayPorts: number[] }> {
  const home = mkdtempSync(join(tmpdir(), 'turnstream-chaos-'));
  // Kafka node i listens on base + 2i (client) and base + 2i + 1 (controller): a block of 2 per node.
  const brokerCount = o.cluster ? 3 : 1;
  const kafkaPort = await freePortBlock(2 * brokerCount);
  const block = Array.from({ length: 2 * brokerCount }, (_, i) => kafkaPort + i);
  const [registryPort, clickhousePort, clickhouseTcpPort, ...gatewayPorts] = await distinctFreePorts(o.cluster ? 5 : 4, block);
  const stack: StackOptions = {
    home,
    distDir: o.distDir ?? home,
    brokerCount,
    kafkaPort,
    kafkaControllerPort: kafkaPort + 1,
    registryPort: registryPort!,
    clickhousePort: clickhousePort!,
    clickhouseTcpPort: clickhouseTcpPort!,
  };
  say(`chaos: a stack of its own in ${home}${o.cluster ? ' (three brokers)' : ''}`);
  const up = await stackUp({ ...stack, onProgress: (p) => say(`  ${p.service}: ${p.message}`) });
  return { home, stack, up, gatewayPorts };
}

/** Ctrl-C or a SIGTERM stops the services and the stack this run started, as its end does; returns the handlers' removal. */
function stopOnSignals(cleanup: () => Promise<void>, say: (line: string) => void): () => void {
  const onSignal = (signal: NodeJS.Signals): void => {
    say(`chaos: ${signal}: stopping what it started`);
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/** Runs the selected scenarios (`repeat` times over), one after another, each with a session prefix of its own. */
async function runScenarios(
  o: ChaosOptions,
  all: Scenario[],
  shared: { stack: StackOptions; supervisor: Supervisor; kafka: Kafka; codecs: EventCodecs; gatewayUrl: string; gatewayUrls: string[] },
  observer: Observer,
  results: ScenarioResult[],
): Promise<void> {
  const say = o.progress ?? (() => undefined);
  const calls = o.calls ?? 60;
  const selected = all.filter((s) => !o.only?.length || o.only.some((f) => s.name.includes(f)));
  const list = Array.from({ length: o.repeat ?? 1 }, () => selected).flat();
  for (const [i, sc] of list.entries()) {
    const prefix = `chaos-${i}-`;
    say(`chaos: ${sc.name}`);
    const ctx: FaultContext = { ...shared, prefix, affinity: o.affinity ?? 'session', downSeconds: o.downSeconds ?? 10, progress: say };
    results.push(await runScenario(sc.name, sc, ctx, calls, observer, say));
    const r = results.at(-1)!;
    say(
      `  answered ${r.answered}, turns ${r.turns} (${r.duplicates} duplicates), pairs ${r.pairs}, judgements ${r.judgements}, samples ${r.samples}, ClickHouse ${r.clickhouse_rows}, lost ${r.lost}, doubled ${r.doubled}, recovered in ${r.recover_s ?? '—'} s`,
    );
  }
}

/** Passes when every scenario lost and doubled nothing and recovered, the weight versions are consecutive, the slow readers' normal p99 is under 1 s, and a moved trainer's version reached every gateway. */
function verdict(home: string, results: ScenarioResult[], versions: number[], t0: number): ChaosResult {
  const consecutive = versions.every((v, i) => v === i + 1);
  const ok =
    results.length > 0 &&
    results.every((r) => r.lost === 0 && r.doubled === 0 && r.recover_s !== null) &&
    consecutive &&
    results.filter((r) => r.scenario.includes('slow readers')).every((r) => Number(r.details.normal_p99_ms) < 1000) &&
    // The moved trainer published a version, and every gateway served it.
    results.filter((r) => r.scenario.includes('trainer moved')).every((r) => Number(r.details.served_by_every_gateway_s) >= 0);
  return {
    ok,
    home,
    scenarios: results,
    weight_versions: versions.length,
    weight_versions_consecutive: consecutive,
    seconds: Math.round((Date.now() - t0) / 1000),
  };
}
