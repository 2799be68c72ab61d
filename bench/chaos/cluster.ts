/**
 * `turnstream chaos --cluster`: the services spread as on several hosts, on three Kafka brokers:
 * two gateways, each with a home of its own (its outbox, its weight store); three instances of
 * each processor; the trainer on a home of its own, its versions travelling through Kafka; one
 * ClickHouse sink. Its scenarios are the scale events: a processor group scaled in and out, an
 * instance held with a transaction open while its partitions move, kill -9 of an instance, of the
 * leader broker of the busiest partitions and then of two brokers, a rolling restart of the
 * gateways, and the trainer moved to another home.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Admin, Kafka } from 'kafkajs';
import { kafkaNodePids, stackUp, type ServiceSpec, type Supervisor } from '../../infra/index.ts';
import { defaultGroupId } from '../../processors/index.ts';
import type { Observer } from './observe.ts';
import { scaleGroup, type GroupMembers, type MoveWaits } from './partition-moves.ts';
import { killService, type FaultDetails, type Scenario } from './scenarios.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The processors run three times each. */
export const PROCESSORS = ['session-assembler', 'judge', 'sample-builder'] as const;
/** Instances of each processor. */
export const INSTANCES = 3;

/** Where each service of the cluster runs: its name under the supervisor, and its spec. */
export class ClusterServices {
  readonly specs = new Map<string, ServiceSpec>();
  readonly gatewayUrls: string[];

  constructor(
    readonly home: string,
    gatewayPorts: number[],
  ) {
    this.gatewayUrls = gatewayPorts.map((p) => `http://127.0.0.1:${p}`);
  }

  /** The home of a service that keeps files of its own (`gateway-a`, `trainer-b`): a folder of the run's home. */
  homeOf(name: string): string {
    const dir = join(this.home, 'hosts', name);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** Starts every service and waits (up to 6 minutes) until all are ready. */
  async start(supervisor: Supervisor): Promise<void> {
    const httpOk = (url: string) => async () => (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
    this.gatewayUrls.forEach((url, i) => {
      const name = `gateway-${'ab'[i]}`;
      this.run(supervisor, {
        name,
        args: ['gateway'],
        url,
        healthy: httpOk(`${url}/readyz`),
        env: { TURNSTREAM_HOME: this.homeOf(name), PORT: new URL(url).port },
      });
    });
    for (const p of PROCESSORS)
      for (let i = 0; i < INSTANCES; i++) this.run(supervisor, { name: `${p}-i${i}`, args: ['process', p, '--instance', `i${i}`] });
    this.run(supervisor, this.trainerSpec('trainer-a'));
    this.run(supervisor, { name: 'clickhouse-sink', args: ['sink'] });
    if (!(await supervisor.waitReady(360_000))) throw new Error(`services did not come up; see ${join(this.home, 'logs')}`);
  }

  /** The trainer on home `name`, publishing its versions through Kafka. */
  trainerSpec(name: string): ServiceSpec {
    return {
      name,
      args: ['train', '--backend', 'cpu', '--weights-transport', 'kafka'],
      env: { TURNSTREAM_HOME: this.homeOf(name) },
    };
  }

  run(supervisor: Supervisor, spec: ServiceSpec): void {
    this.specs.set(spec.name, spec);
    supervisor.start(spec);
  }

  /** The instances of `service`'s group as supervised processes (a SIGSTOP holds one mid-stream). */
  members(supervisor: Supervisor, service: string): GroupMembers {
    const name = (id: string) => `${service}-${id}`;
    const pid = (id: string): number => {
      const p = supervisor.states().find((s) => s.name === name(id))?.pid;
      if (!p) throw new Error(`${name(id)} is not running`);
      return p;
    };
    return {
      start: async (id) => {
        if (!supervisor.states().some((s) => s.name === name(id)))
          this.run(supervisor, { name: name(id), args: ['process', service, '--instance', id] });
      },
      stop: (id) => supervisor.stop(name(id)),
      stall: async (id) => void process.kill(pid(id), 'SIGSTOP'),
      resume: async (id) => void process.kill(pid(id), 'SIGCONT'),
    };
  }
}

/** The members of `groupId` by client id, once the group is Stable. */
async function stableMembers(admin: Admin, groupId: string): Promise<string[] | undefined> {
  const { groups } = await admin.describeGroups([groupId]);
  const g = groups[0];
  return g?.state === 'Stable' ? g.members.map((m) => m.clientId) : undefined;
}

/** Waits until `groupId` is Stable with exactly the instances `ids` of `service` (clients `turnstream-<service>-<id>`). */
async function groupIs(kafka: Kafka, groupId: string, service: string, ids: () => string[], timeoutMs = 120_000): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(500)) {
      const members = await stableMembers(admin, groupId).catch(() => undefined);
      const want = ids()
        .map((id) => `turnstream-${service}-${id}`)
        .sort();
      if (members && JSON.stringify([...members].sort()) === JSON.stringify(want)) return;
    }
    throw new Error(`${groupId} did not settle on ${ids().join(', ')} in ${timeoutMs / 1000} s`);
  } finally {
    await admin.disconnect();
  }
}

/** The running instance ids of `service` under the supervisor (`<service>-<id>`), paused ones included. */
const runningIds = (supervisor: Supervisor, service: string, except: string[] = []): string[] =>
  supervisor
    .states()
    .filter((s) => s.name.startsWith(`${service}-i`) && s.state !== 'stopped')
    .map((s) => s.name.slice(service.length + 1))
    .filter((id) => !except.includes(id));

/** `service`'s group scaled in from three instances to one and out to three again, each step settled. */
function scaleInOut(cluster: ClusterServices, service: string): Scenario {
  return {
    name: `${service} scaled ${INSTANCES} → 1 → ${INSTANCES}`,
    async inject(ctx) {
      const groupId = defaultGroupId(service);
      const waits: MoveWaits = {
        settled: () => groupIs(ctx.kafka, groupId, service, () => runningIds(ctx.supervisor, service)),
        taken: () => Promise.resolve(),
      };
      const from = Array.from({ length: INSTANCES }, (_, i) => `i${i}`);
      const { steps } = await scaleGroup(cluster.members(ctx.supervisor, service), waits, [1, INSTANCES], ctx.progress, from);
      return Object.fromEntries(steps.map((s, i) => [`step${i}_${s.instances}_instances_s`, Number(s.seconds.toFixed(1))]));
    },
  };
}

/**
 * An instance of `service` held (SIGSTOP) mid-stream, its transaction open, until the group gave
 * its partitions to the others and they handled their records; then let go: the commit it held
 * must be refused. The group settles back to three.
 */
function heldWhilePartitionsMove(cluster: ClusterServices, service: string): Scenario {
  return {
    name: `${service}: an instance held mid-transaction while its partitions move`,
    async inject(ctx) {
      const groupId = defaultGroupId(service);
      const members = cluster.members(ctx.supervisor, service);
      const t0 = Date.now();
      await members.stall('i0');
      ctx.progress(`  ${service}-i0 held (SIGSTOP) with its work in flight`);
      await groupIs(ctx.kafka, groupId, service, () => runningIds(ctx.supervisor, service, ['i0']));
      const takenS = (Date.now() - t0) / 1000;
      ctx.progress(`  its partitions moved to the other two in ${takenS.toFixed(1)} s; i0 let go (its held commit must be refused)`);
      await members.resume('i0');
      await groupIs(ctx.kafka, groupId, service, () => runningIds(ctx.supervisor, service));
      return { taken_s: Number(takenS.toFixed(1)), rejoined_s: Number(((Date.now() - t0) / 1000).toFixed(1)) };
    },
  };
}

/** The broker leading the most partitions of the turns topic (the busiest), by node id. */
async function busiestLeader(kafka: Kafka, topic: string, except: number[] = []): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const led = new Map<number, number>();
    for (const p of topics[0]!.partitions) if (!except.includes(p.leader)) led.set(p.leader, (led.get(p.leader) ?? 0) + 1);
    const [node] = [...led.entries()].sort((a, b) => b[1] - a[1])[0] ?? [];
    if (node === undefined) throw new Error(`no live leader of ${topic}`);
    return node;
  } finally {
    await admin.disconnect();
  }
}

/** kill -9 of `count` brokers (the leaders of the busiest partitions first), all started again after `downSeconds`. */
function killBrokers(count: 1 | 2): Scenario {
  return {
    name: count === 1 ? 'kill -9 the leader broker of the busiest partitions' : 'kill -9 two of three brokers (writes stop, then resume)',
    async inject(ctx) {
      const killed: number[] = [];
      for (let k = 0; k < count; k++) {
        const node = await busiestLeader(ctx.kafka, ctx.codecs.topic('turns'), killed);
        const pid = kafkaNodePids(ctx.stack)[node - 1];
        if (!pid) throw new Error(`broker ${node} is not running`);
        process.kill(pid, 'SIGKILL');
        killed.push(node);
        ctx.progress(`  killed broker ${node} (pid ${pid})`);
        if (k + 1 < count) await sleep(3000);
      }
      await sleep(ctx.downSeconds * 1000);
      const t0 = Date.now();
      await stackUp({ ...ctx.stack, onProgress: undefined });
      ctx.progress(`  brokers ${killed.join(', ')} are back (${((Date.now() - t0) / 1000).toFixed(1)} s to start)`);
      return { brokers_killed: killed.join(','), down_s: ctx.downSeconds };
    },
  };
}

/** Each gateway stopped (SIGTERM) and started again on its home, one after the other, while clients stream. */
function rollingGatewayRestart(cluster: ClusterServices): Scenario {
  return {
    name: 'rolling restart of the gateways',
    async inject(ctx) {
      const out: FaultDetails = {};
      for (const name of [...cluster.specs.keys()].filter((n) => n.startsWith('gateway-'))) {
        const t0 = Date.now();
        await ctx.supervisor.stop(name);
        cluster.run(ctx.supervisor, cluster.specs.get(name)!);
        if (!(await ctx.supervisor.waitReady(120_000))) throw new Error(`${name} did not come back`);
        out[`${name}_back_s`] = Number(((Date.now() - t0) / 1000).toFixed(1));
        ctx.progress(`  ${name} restarted, ready in ${out[`${name}_back_s`]} s`);
      }
      return out;
    },
  };
}

/** Seconds until every gateway answers with policy version `version` or newer (a call each every 500 ms); -1 when one does not in `timeoutMs`. */
async function servedEverywhere(urls: string[], version: number, prefix: string, timeoutMs = 120_000): Promise<number> {
  const t0 = Date.now();
  const pending = new Set(urls);
  for (let k = 0; pending.size > 0 && Date.now() - t0 < timeoutMs; k++) {
    for (const url of [...pending]) {
      // A session of its own per call: one session's turns through two gateways may be read out of order.
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-session-id': `${prefix}version-${k}-${urls.indexOf(url)}`,
          'x-user-id': `${prefix}version`,
        },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'which version?' }], max_tokens: 2 }),
        signal: AbortSignal.timeout(10_000),
      }).catch(() => null);
      await res?.text();
      if (res?.ok && Number(res.headers.get('x-policy-version')) >= version) pending.delete(url);
    }
    if (pending.size > 0) await sleep(500);
  }
  return pending.size === 0 ? Number(((Date.now() - t0) / 1000).toFixed(1)) : -1;
}

/** The trainer stopped on its home and started on another (an empty weight store: it fetches the last version through Kafka). */
function trainerMoved(cluster: ClusterServices, observer: Observer): Scenario {
  return {
    name: 'the trainer moved to another home',
    async inject(ctx) {
      // Versions are told apart by when they were made: one the old trainer made before it stopped
      // may still be on its way to the observer, and is not the new trainer's.
      const newest = (made: (at: number) => boolean): number =>
        Math.max(0, ...[...observer.seen.weights.values()].filter((w) => made(w.createdAt)).map((w) => w.version));
      const from = [...cluster.specs.keys()].find((n) => n.startsWith('trainer-'))!;
      const to = from === 'trainer-a' ? 'trainer-b' : 'trainer-a';
      await ctx.supervisor.stop(from);
      cluster.specs.delete(from);
      const t0 = Date.now();
      cluster.run(ctx.supervisor, cluster.trainerSpec(to));
      ctx.progress(`  ${from} stopped; ${to} started on a home of its own`);
      const byNew = (at: number): boolean => at >= t0;
      for (const deadline = Date.now() + 240_000; newest(byNew) === 0 && Date.now() < deadline;) await sleep(500);
      const after = newest(byNew);
      const before = newest((at) => at < t0);
      const firstS = after > 0 ? Number(((Date.now() - t0) / 1000).toFixed(1)) : -1;
      if (after > 0) ctx.progress(`  ${from}'s last version ${before}; ${to} published version ${after} after ${firstS} s`);
      // Both gateways, each on a home of its own, fetch it through Kafka and serve it.
      const servedS = after > 0 ? await servedEverywhere(ctx.gatewayUrls, after, ctx.prefix) : -1;
      if (servedS >= 0) ctx.progress(`  both gateways serve version ${after} or newer ${servedS} s later`);
      return { version_before: before, version_after: after, first_version_s: firstS, served_by_every_gateway_s: servedS };
    },
  };
}

/** The scenarios of `chaos --cluster`, in the order they run. */
export function clusterScenarios(cluster: ClusterServices, observer: Observer): Scenario[] {
  return [
    { name: 'no fault (baseline)', inject: async () => ({}) },
    scaleInOut(cluster, 'judge'),
    heldWhilePartitionsMove(cluster, 'session-assembler'),
    killService('sample-builder-i1'),
    killBrokers(1),
    killBrokers(2),
    rollingGatewayRestart(cluster),
    trainerMoved(cluster, observer),
  ];
}
