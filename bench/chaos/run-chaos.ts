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
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AnalyticsStore } from '../../analytics/index.ts';
import { Supervisor } from '../../infra/index.ts';
import { getFreePort, stackDown, stackUp, type StackOptions } from '../../infra/index.ts';
import { createKafka, createLogger, parseBrokers, waitForDependencies } from '../../streams/index.ts';
import { quantile } from '../support.ts';
import { chatCall, runConversations, type CallResult } from './load.ts';
import { Observer } from './observe.ts';
import { scenarios, type FaultContext, type FaultDetails } from './scenarios.ts';

const BIN = fileURLToPath(new URL('../../bin/turnstream.js', import.meta.url));

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
  progress?: (line: string) => void;
}

export interface ScenarioResult {
  scenario: string;
  answered: number;
  turns: number;
  distinct: number;
  duplicates: number;
  pairs: number;
  judgements: number;
  samples: number;
  clickhouse_rows: number;
  dead_lettered: number;
  lost: number;
  doubled: number;
  recover_s: number | null;
  p50_ms: number;
  p99_ms: number;
  /** p99 of the calls answered after the fault. */
  p99_after_fault_ms: number;
  seconds: number;
  lost_detail?: Record<string, number>;
  /** When doubled > 0: how many extra copies each count saw. */
  doubled_detail?: Record<string, number>;
  details: FaultDetails;
}

export interface ChaosResult {
  ok: boolean;
  home: string;
  scenarios: ScenarioResult[];
  weight_versions: number;
  weight_versions_consecutive: boolean;
  seconds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function distinctPorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await getFreePort());
  return [...ports];
}

export async function runChaos(o: ChaosOptions = {}): Promise<ChaosResult> {
  const t0 = Date.now();
  const say = o.progress ?? (() => undefined);
  const calls = o.calls ?? 60;
  const home = mkdtempSync(join(tmpdir(), 'turnstream-chaos-'));
  const [kafkaPort, kafkaControllerPort, registryPort, clickhousePort, clickhouseTcpPort, gatewayPort] = await distinctPorts(6);
  const stack: StackOptions = {
    home,
    distDir: o.distDir ?? home,
    kafkaPort,
    kafkaControllerPort,
    registryPort,
    clickhousePort,
    clickhouseTcpPort,
  };
  say(`chaos: a stack of its own in ${home}`);
  const up = await stackUp({ ...stack, onProgress: (p) => say(`  ${p.service}: ${p.message}`) });
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
  // Ctrl-C or a SIGTERM stops the services and the stack this run started, as its end does.
  const onSignal = (signal: NodeJS.Signals): void => {
    say(`chaos: ${signal}: stopping what it started`);
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const results: ScenarioResult[] = [];
  let versions: number[] = [];
  // Whatever fails from here on (the registry, init-weights, a service that never comes up), the
  // services and the stack this run started are stopped, as at its end.
  try {
    const logger = createLogger('chaos', 'error');
    const kafka = createKafka({ brokers: parseBrokers(up.brokers), clientId: 'chaos', logger });
    const codecs = await waitForDependencies({ kafka, brokers: up.brokers, registryUrl: up.registryUrl, logger });
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TURNSTREAM_HOME: home,
      KAFKA_BROKERS: up.brokers,
      SCHEMA_REGISTRY_URL: up.registryUrl,
      CLICKHOUSE_URL: up.clickhouseUrl,
      TURNSTREAM_TOPIC_PREFIX: '',
      // The faults are the subject, not the model: the built-in tiny one answers in milliseconds.
      TURNSTREAM_MODEL: 'builtin',
      PORT: String(gatewayPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      // Sessions end on their own soon after their last turn, so every turn gets its pair.
      SESSION_IDLE_TIMEOUT_MS: '4000',
      FEEDBACK_GRACE_MS: '500',
      PROCESSOR_SESSION_TIMEOUT_MS: '8000',
      TRAIN_BATCH_SIZE: '8',
      TRAIN_MAX_WAIT_MS: '3000',
      TRAIN_MAX_STALENESS: '1000',
      GATEWAY_STREAM_STALL_TIMEOUT_MS: '10000',
      SINK_FLUSH_MS: '300',
    };
    for (const k of [
      'TURNSTREAM_API_KEYS',
      'TURNSTREAM_SERVICE_KEYS',
      'UPSTREAM_BASE_URL',
      'JUDGE_BASE_URL',
      'TEACHER_BASE_URL',
      'TURNSTREAM_WEIGHTS_DIR',
    ])
      delete env[k];
    await new Promise<void>((resolve, reject) => {
      const c = spawn(process.execPath, [BIN, 'init-weights'], { env, stdio: 'ignore' });
      c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`init-weights exited ${code}`))));
    });
    const supervisor = (running.supervisor = new Supervisor({
      bin: BIN,
      logDir: join(home, 'logs'),
      env,
      restartDelayMs: 500,
      maxRestartDelayMs: 5000,
      onChange: (name, state, detail) => {
        if (state !== 'running') say(`  ${name}: ${state}${detail ? ` (${detail.split(';')[0]})` : ''}`);
      },
    }));
    const httpOk = (url: string) => async () => (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
    supervisor.start({ name: 'gateway', args: ['gateway'], url: gatewayUrl, healthy: httpOk(`${gatewayUrl}/readyz`) });
    for (const p of ['session-assembler', 'judge', 'sample-builder']) supervisor.start({ name: p, args: ['process', p] });
    supervisor.start({ name: 'trainer', args: ['train', '--backend', 'cpu'] });
    supervisor.start({ name: 'clickhouse-sink', args: ['sink'] });
    if (!(await supervisor.waitReady(240_000))) throw new Error(`services did not come up; see ${join(home, 'logs')}`);
    say('chaos: every service is up');
    const store = new AnalyticsStore({ url: up.clickhouseUrl });
    const observer = await Observer.start(kafka, codecs, store, logger);

    try {
      const selected = scenarios().filter((s) => !o.only?.length || o.only.some((f) => s.name.includes(f)));
      const list = Array.from({ length: o.repeat ?? 1 }, () => selected).flat();
      for (const [i, sc] of list.entries()) {
        const prefix = `chaos-${i}-`;
        say(`chaos: ${sc.name}`);
        const ctx: FaultContext = { stack, supervisor, kafka, codecs, gatewayUrl, prefix, downSeconds: o.downSeconds ?? 10, progress: say };
        results.push(await runScenario(sc.name, sc, ctx, calls, observer, say));
        const r = results.at(-1)!;
        say(
          `  answered ${r.answered}, turns ${r.turns} (${r.duplicates} duplicates), pairs ${r.pairs}, judgements ${r.judgements}, samples ${r.samples}, ClickHouse ${r.clickhouse_rows}, lost ${r.lost}, doubled ${r.doubled}, recovered in ${r.recover_s ?? '—'} s`,
        );
      }
      // The trainer's versions settle last: wait until it has nothing left to publish.
      await sleep(5000);
    } finally {
      versions = [...observer.seen.weights.values()].map((w) => w.version).sort((a, b) => a - b);
      await observer.stop();
      await store.close();
    }
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const consecutive = versions.every((v, i) => v === i + 1);
  const ok =
    results.length > 0 &&
    results.every((r) => r.lost === 0 && r.doubled === 0 && r.recover_s !== null) &&
    consecutive &&
    results.filter((r) => r.scenario.includes('slow readers')).every((r) => Number(r.details.normal_p99_ms) < 1000);
  return {
    ok,
    home,
    scenarios: results,
    weight_versions: versions.length,
    weight_versions_consecutive: consecutive,
    seconds: Math.round((Date.now() - t0) / 1000),
  };
}

async function runScenario(
  name: string,
  sc: ReturnType<typeof scenarios>[number],
  ctx: FaultContext,
  calls: number,
  observer: Observer,
  say: (l: string) => void,
): Promise<ScenarioResult> {
  const t0 = Date.now();
  let faultAt = 0;
  let fault: Promise<FaultDetails> | null = null;
  let during: Promise<FaultDetails> | null = null;
  const probes: CallResult[] = [];
  let probing = false;
  const probeLoop = async (): Promise<void> => {
    for (let k = 0; probing; k++) {
      const sent = Date.now();
      // Each probe is a conversation of its own, answered when the gateway can.
      void chatCall(
        ctx.gatewayUrl,
        { messages: [{ role: 'user', content: `probe ${k}` }], max_tokens: 4 },
        { 'x-session-id': `${ctx.prefix}probe-${k}`, 'idempotency-key': `${ctx.prefix}probe-${k}` },
        300_000,
      ).then((r) => void (r && probes.push({ ...r, at: sent })));
      await sleep(1000);
    }
  };
  // Recovery: when the first probe made after the fault shows up in ClickHouse, watched from the
  // fault on (whatever the fault itself still waits for).
  let recoverS: number | null = null;
  let watching = false;
  const watch = async (): Promise<void> => {
    for (const deadline = faultAt + 300_000; recoverS === null && watching && Date.now() < deadline; await sleep(500)) {
      const inCh = await observer.clickhouseTurns(`${ctx.prefix}probe-`);
      if ([...inCh.keys()].some((id) => probes.some((p) => p.turnId === id))) recoverS = Math.round((Date.now() - faultAt) / 100) / 10;
    }
  };
  let watcher: Promise<void> = Promise.resolve();
  const startFault = (): void => {
    if (fault) return;
    faultAt = Date.now();
    probing = true;
    watching = true;
    void probeLoop();
    watcher = watch();
    fault = sc.inject(ctx);
    if (sc.during) during = sc.during(ctx);
  };
  const load = await runConversations({
    url: ctx.gatewayUrl,
    prefix: ctx.prefix,
    calls,
    onAnswered: (n) => {
      if (n >= Math.floor(calls / 3)) startFault();
    },
  });
  startFault();
  const details: FaultDetails = { ...(await fault!), ...(during ? await during : {}) };

  await watcher;
  watching = false;
  probing = false;
  await sleep(1500); // the last probes in flight
  // Settle: wait until every answered turn went all the way, or give up and count what is missing.
  const answered = new Map<string, CallResult>();
  for (const c of [...load.answered, ...probes]) answered.set(c.turnId, c);
  let counts = await count(ctx, observer, answered);
  for (const deadline = Date.now() + 180_000; counts.lost > 0 && Date.now() < deadline; await sleep(2000))
    counts = await count(ctx, observer, answered);
  await sleep(3000); // anything doubled shows up by now
  counts = await count(ctx, observer, answered);
  const ms = [...answered.values()].map((c) => c.ms).sort((a, b) => a - b);
  const after = [...answered.values()]
    .filter((c) => c.at >= faultAt)
    .map((c) => c.ms)
    .sort((a, b) => a - b);
  if (counts.lost > 0) say(`  missing: ${JSON.stringify(counts.detail)} e.g. ${JSON.stringify(counts.examples)}`);
  if (counts.doubled > 0) say(`  doubled: ${JSON.stringify(counts.doubledDetail)} e.g. ${JSON.stringify(counts.doubledExamples)}`);
  return {
    scenario: name,
    answered: answered.size,
    turns: counts.turns,
    distinct: counts.distinct,
    duplicates: counts.turns - counts.distinct,
    pairs: counts.pairs,
    judgements: counts.judgements,
    samples: counts.samples,
    clickhouse_rows: counts.clickhouse,
    dead_lettered: counts.dlq,
    lost: counts.lost,
    doubled: counts.doubled,
    recover_s: recoverS,
    p50_ms: quantile(ms, 0.5),
    p99_ms: quantile(ms, 0.99),
    p99_after_fault_ms: quantile(after, 0.99),
    seconds: Math.round((Date.now() - t0) / 1000),
    ...(counts.lost > 0 ? { lost_detail: counts.detail } : {}),
    ...(counts.doubled > 0 ? { doubled_detail: counts.doubledDetail } : {}),
    details: { ...details, unanswered: load.unanswered, feedback: load.feedback },
  };
}

async function count(ctx: FaultContext, observer: Observer, answered: Map<string, CallResult>) {
  const p = ctx.prefix;
  const turns = observer.of('turns', p);
  const turnIds = new Set(turns.map((t) => t.turnId));
  // Turns the gateway captured for answered calls, plus the oversized one (answered to its client too).
  for (const t of turns)
    if (t.truncation && !answered.has(t.turnId))
      answered.set(t.turnId, { turnId: t.turnId, sessionId: t.sessionId, ms: 0, at: 0, attempts: 1 });
  const pairs = observer.of('pairs', p);
  const pairIds = new Set(pairs.map((x) => x.pairId));
  const judgements = observer.of('judgements', p);
  const judged = new Set(judgements.map((j) => j.turnId));
  const judgementIds = new Set(judgements.map((j) => j.judgementId));
  const samples = observer.of('samples', p);
  const sampleIds = new Set(samples.map((s) => s.sampleId));
  const dlq = observer.of('dlq', p);
  const deadPairs = new Set<string>();
  for (const d of dlq) {
    if (d.topic !== ctx.codecs.topic('pairs') || !d.value) continue;
    const pair = await ctx.codecs
      .of('pairs')
      .decode(d.value)
      .catch(() => null);
    if (pair) deadPairs.add(pair.pairId);
  }
  const ch = await observer.clickhouseTurns(p);
  const ids = {
    turns_topic: [...answered.keys()].filter((id) => !turnIds.has(id)),
    clickhouse: [...answered.keys()].filter((id) => !ch.has(id)),
    pairs: [...new Set(turns.filter((t) => t.turnType === 'MAIN' && !pairIds.has(t.turnId)).map((t) => `${t.sessionId}/${t.turnId}`))],
    judgements: [...pairIds].filter((id) => !judged.has(id) && !deadPairs.has(id)),
  };
  const missing = Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, v.length])) as Record<keyof typeof ids, number>;
  const twice = {
    pairs: repeated(pairs.map((x) => x.pairId)),
    judgements: repeated(judgements.map((j) => j.judgementId)),
    samples: repeated(samples.map((s) => s.sampleId)),
    clickhouse: [...ch].filter(([, n]) => n > 1).map(([id]) => id),
  };
  const doubledBy = {
    pairs: pairs.length - pairIds.size,
    judgements: judgements.length - judgementIds.size,
    samples: samples.length - sampleIds.size,
    clickhouse: [...ch.values()].reduce((a, n) => a + n - 1, 0),
  };
  const doubled = Object.values(doubledBy).reduce((a, n) => a + n, 0);
  return {
    turns: turns.length,
    distinct: turnIds.size,
    pairs: pairIds.size,
    judgements: judgementIds.size,
    samples: sampleIds.size,
    clickhouse: ch.size,
    dlq: dlq.length,
    lost: missing.turns_topic + missing.clickhouse + missing.pairs + missing.judgements,
    doubled,
    detail: missing,
    doubledDetail: doubledBy,
    /** A few of the ids seen more than once, to look them up in the logs. */
    doubledExamples: Object.fromEntries(
      Object.entries(twice)
        .filter(([, v]) => v.length > 0)
        .map(([k, v]) => [k, v.slice(0, 3)]),
    ),
    /** A few of the missing ids, to look them up in the logs. */
    examples: Object.fromEntries(
      Object.entries(ids)
        .filter(([, v]) => v.length > 0)
        .map(([k, v]) => [k, v.slice(0, 3)]),
    ),
  };
}

/** The values that occur more than once in `ids`. */
function repeated(ids: string[]): string[] {
  const seen = new Set<string>();
  return [...new Set(ids.filter((id) => seen.has(id) || !seen.add(id)))];
}
