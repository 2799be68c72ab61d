/**
 * up / down / status of the whole local stack. `up` is idempotent: a service whose pid
 * is alive and healthy is reused, so a second `up` takes a moment; of several Kafka nodes, the
 * ones not running are started again. Endpoints given in the options (an existing Kafka,
 * registry or ClickHouse) are only health-checked.
 */
import { join } from 'node:path';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { clickhouseCommand, clickhouseVersion, prepareClickhouse } from './clickhouse.ts';
import { installKafka, kafkaCommand, kafkaHealthy, prepareKafka } from './kafka.ts';
import { withLock } from './lock.ts';
import type { ClickhouseSecurity, StackEndpoints, StackOptions, StackSecurity } from './options.ts';
import { preflight } from './preflight.ts';
import { findClickhouse } from './prerequisites.ts';
import { readLivePid, spawnDetached, stopByPidFile, waitFor } from './process.ts';
import { installRegistry, prepareRegistry, registryCommand, registryHealthy } from './registry.ts';
import { prepareSecurity, secureSettings } from './secure.ts';
import { instancesOf, ownEndpoints, plan, securityOf, VARIABLE, type Plan, type ServiceName, type StackReporter } from './stack-plan.ts';

export type { ServiceName } from './stack-plan.ts';

const SERVICES: readonly ServiceName[] = ['kafka', 'registry', 'clickhouse'];

/** Health of the three services, in the shape `turnstream infra status --json` prints. */
export interface StackStatus {
  kafka: { up: boolean; brokers: string };
  registry: { up: boolean; url: string };
  clickhouse: { up: boolean; url: string; version?: string };
}

/** What `up` did for one service. */
export interface ServiceReport {
  /** `started` now (all or some of its processes), `reused` a running one we manage, or `external` (given endpoint). */
  state: 'started' | 'reused' | 'external';
  /** Pid of the process we manage (Kafka: its first node's); undefined for an external service. */
  pid: number | undefined;
  /** Pids of every process we manage, in order (Kafka: one per node). */
  pids: number[];
  /** Milliseconds until the service was healthy. */
  ms: number;
  /** Log file of a managed service (Kafka: its first node's). */
  logFile: string | undefined;
}

export interface StackUpResult extends StackEndpoints {
  services: Record<ServiceName, ServiceReport>;
  /** How clients reach each service: a secured stack's own TLS trust and logins, or the given ones. */
  security: StackSecurity;
  /** Total milliseconds of `up`. */
  ms: number;
}

/** The endpoints and logins a configuration gives (`TurnstreamConfig`, a bench's or a stack's settings). */
export interface ConfiguredStack {
  home: string;
  kafkaBrokers: string | undefined;
  schemaRegistryUrl: string | undefined;
  clickhouseUrl: string | undefined;
  security: Omit<StackSecurity, 'clickhouse'>;
  clickhouse: ClickhouseSecurity;
}

/**
 * {@link stackUp} for a configuration: the local stack where it gives no endpoint, a health check
 * of the ones it gives, each with its security; `onProgress` hears each step.
 */
export function stackUpFor(config: ConfiguredStack, onProgress?: StackOptions['onProgress']): Promise<StackUpResult> {
  const c = config.clickhouse;
  return stackUp({
    home: config.home,
    kafkaBrokers: config.kafkaBrokers,
    schemaRegistryUrl: config.schemaRegistryUrl,
    clickhouseUrl: config.clickhouseUrl,
    security: { ...config.security, clickhouse: { username: c.username, password: c.password, tls: c.tls } },
    onProgress,
  });
}

/** Starts what is not running (or reuses it) and waits until all three are healthy. */
export async function stackUp(options: StackOptions = {}): Promise<StackUpResult> {
  const p = plan(options);
  const { o, endpoints } = p;
  const t0 = Date.now();
  const progress: StackReporter = (service, message) => o.onProgress({ service, message, elapsedMs: Date.now() - t0 });
  return withLock(join(o.home, 'pids', 'stack.lock'), o.startTimeoutMs, async () => {
    const { local, running } = await survey(p, progress);
    const missing = (s: ServiceName): number[] => (local[s] ? running[s].flatMap((pid, i) => (pid === undefined ? [i] : [])) : []);
    await preflight(p, missing, progress);
    if (o.secure && SERVICES.some((s) => local[s]) && (await prepareSecurity(o, p.secure))) {
      progress('stack', `wrote the CA, the services' certificate and the passwords in ${p.secure.dir}`);
    }
    const security = securityOf(p, local);
    const services = await startAll(p, local, running, security, progress);
    return { ...endpoints, security, services, ms: Date.now() - t0 };
  });
}

/** Which services this home runs (`local`), and the pid of each of their processes that runs already. */
interface Survey {
  local: Record<ServiceName, boolean>;
  running: Record<ServiceName, Array<number | undefined>>;
}

async function survey(p: Plan, progress: StackReporter): Promise<Survey> {
  const { o } = p;
  const own = ownEndpoints(p);
  if (own.kafka || own.registry || own.clickhouse) {
    const which = SERVICES.filter((s) => own[s]);
    progress(
      'stack',
      `${which.map((s) => VARIABLE[s]).join(', ')} name${which.length === 1 ? 's' : ''} this home's own ${which.join(', ')}: managed here (started again if down)`,
    );
  }
  const local: Record<ServiceName, boolean> = {
    kafka: !o.kafkaBrokers || own.kafka,
    registry: !o.schemaRegistryUrl || own.registry,
    clickhouse: !o.clickhouseUrl || own.clickhouse,
  };
  const pidsOf = (s: ServiceName): Array<number | undefined> =>
    instancesOf(p, s).map((i) => (local[s] ? readLivePid(i.pidFile, i.marker) : undefined));
  const running = { kafka: pidsOf('kafka'), registry: pidsOf('registry'), clickhouse: pidsOf('clickhouse') };
  // A given endpoint on this home's ports that this home is not running, but that answers, is
  // another home's stack on the same ports (a second checkout): used as given, not restarted.
  const healthy = healthChecks(p, securityOf(p, local));
  for (const s of SERVICES) {
    if (own[s] && running[s].every((pid) => pid === undefined) && (await healthy[s]().catch(() => false))) {
      local[s] = false;
      progress(s, `${VARIABLE[s]} answers, though not from this home: used as given`);
    }
  }
  return { local, running };
}

const healthChecks = (p: Plan, security: StackSecurity): Record<ServiceName, () => Promise<boolean>> => ({
  // A local stack of several nodes is up once every node has joined.
  kafka: () => kafkaHealthy(p.endpoints.brokers, { security: security.kafka, brokers: p.o.kafkaBrokers ? 1 : p.o.brokerCount }),
  registry: () => registryHealthy(p.endpoints.registryUrl, 3_000, security.registry),
  clickhouse: async () => (await clickhouseVersion(p.endpoints.clickhouseUrl, 3_000, security.clickhouse)) !== undefined,
});

/** Brings the three services up, Kafka and ClickHouse at once and the registry after Kafka. */
async function startAll(
  p: Plan,
  local: Survey['local'],
  running: Survey['running'],
  security: StackSecurity,
  progress: StackReporter,
): Promise<Record<ServiceName, ServiceReport>> {
  const healthy = healthChecks(p, security);
  const launch = launchers(p, progress);
  const up = (s: ServiceName): Promise<ServiceReport> => bringUp(p, s, running[s], local[s], healthy[s], launch[s], progress);
  const kafkaUp = up('kafka');
  const clickhouseUp = up('clickhouse');
  // The registry's storage is Kafka: start it once Kafka answers.
  const registryUp = kafkaUp.then(() => up('registry'));
  const [kafka, registry, clickhouse] = await Promise.all([kafkaUp, registryUp, clickhouseUp]);
  return { kafka, registry, clickhouse };
}

interface Launch {
  command: string;
  args: string[];
  logFile: string;
  pidFile: string;
  marker: string;
}

/** Per service, what to do before its first start (install, format, configure) and how to launch each of its processes. */
function launchers(p: Plan, progress: StackReporter): Record<ServiceName, () => Promise<Launch[]>> {
  const { o, endpoints } = p;
  return {
    kafka: async () => {
      if (await installKafka(o, p.kafka)) progress('kafka', `downloaded Kafka jars into ${p.kafka.libs}`);
      if (await prepareKafka(o, p.kafka)) progress('kafka', `formatted storage in ${p.kafka.nodes.map((n) => n.dataDir).join(', ')}`);
      return p.kafka.nodes.map((n) => ({
        ...kafkaCommand(o, p.kafka.libs, n),
        logFile: n.stdoutLog,
        pidFile: n.pidFile,
        marker: n.serverProperties,
      }));
    },
    registry: async () => {
      if (await installRegistry(o, p.registry)) progress('registry', `unpacked Apicurio into ${p.registry.appDir}`);
      prepareRegistry(o, p.registry);
      return [
        {
          ...registryCommand(o, p.registry, endpoints.brokers),
          logFile: p.registry.stdoutLog,
          pidFile: p.registry.pidFile,
          marker: p.registry.dataDir,
        },
      ];
    },
    clickhouse: async () => {
      const found = findClickhouse(o.clickhouseBinary);
      if (!found) throw new TurnstreamError(ErrorCodes.PREREQUISITE, 'clickhouse-server not found');
      prepareClickhouse(o, p.clickhouse);
      return [
        {
          ...clickhouseCommand(found, p.clickhouse),
          logFile: p.clickhouse.stdoutLog,
          pidFile: p.clickhouse.pidFile,
          marker: p.clickhouse.configFile,
        },
      ];
    },
  };
}

const LABEL: Record<ServiceName, string> = { kafka: 'Kafka', registry: 'Schema Registry', clickhouse: 'ClickHouse' };

async function bringUp(
  p: Plan,
  service: ServiceName,
  runningPids: Array<number | undefined>,
  isLocal: boolean,
  healthy: () => Promise<boolean>,
  prepare: () => Promise<Launch[]>,
  progress: StackReporter,
): Promise<ServiceReport> {
  const t = Date.now();
  const where = service === 'kafka' ? p.endpoints.brokers : service === 'registry' ? p.endpoints.registryUrl : p.endpoints.clickhouseUrl;
  if (!isLocal) {
    if (!(await healthy())) {
      throw new TurnstreamError(
        ErrorCodes.UNAVAILABLE,
        `${LABEL[service]} at ${where} does not answer. ${VARIABLE[service]} is set, so it is not started here; unset ${VARIABLE[service]} to start the local one, or start the one it names`,
      );
    }
    progress(service, `using ${where}`);
    return { state: 'external', pid: undefined, pids: [], ms: Date.now() - t, logFile: undefined };
  }
  const wait = (pids: number[], logFile: string): Promise<void> =>
    waitFor(healthy, {
      name: LABEL[service],
      timeoutMs: p.o.startTimeoutMs,
      pid: pids,
      logFile,
      onWaiting: (ms) => progress(service, `waiting for ${where} (${Math.round(ms / 1000)} s)`),
    });
  const logFile = logOf(p, service);
  if (runningPids.every((pid) => pid !== undefined)) {
    const pids = runningPids as number[];
    await wait(pids, logFile);
    progress(service, `reusing pid ${pids.join(', ')} at ${where}`);
    return { state: 'reused', pid: pids[0], pids, ms: Date.now() - t, logFile };
  }
  const launches = await prepare();
  const pids = launches.map((launch, i) => {
    const pid = runningPids[i] ?? spawnDetached({ ...launch, cwd: p.o.home });
    if (runningPids[i] === undefined) progress(service, `started pid ${pid}, log ${launch.logFile}`);
    return pid;
  });
  await wait(pids, logFile);
  const ms = Date.now() - t;
  progress(service, `up at ${where} in ${(ms / 1000).toFixed(1)} s`);
  return { state: 'started', pid: pids[0], pids, ms, logFile };
}

const logOf = (p: Plan, s: ServiceName): string =>
  s === 'kafka'
    ? join(p.kafka.nodes[0].logDir, 'server.log')
    : s === 'registry'
      ? p.registry.stdoutLog
      : join(p.clickhouse.logDir, 'clickhouse-server.log');

/** Stops the processes of `s` this home manages, side by side; the first pid stopped, if any. */
async function stopService(p: Plan, s: ServiceName): Promise<number | undefined> {
  const stopped = await Promise.all(instancesOf(p, s).map((i) => stopByPidFile(i.pidFile, p.o.stopTimeoutMs, i.marker)));
  return stopped.find((pid) => pid !== undefined);
}

/** Stops the services this home manages (registry first, as it uses Kafka); returns the pids stopped (Kafka: its first node's). */
export async function stackDown(options: StackOptions = {}): Promise<Record<ServiceName, number | undefined>> {
  const p = plan(options);
  const t0 = Date.now();
  const progress = (service: ServiceName, pid: number | undefined): void => {
    if (pid !== undefined) p.o.onProgress({ service, message: `stopped pid ${pid}`, elapsedMs: Date.now() - t0 });
  };
  return withLock(join(p.o.home, 'pids', 'stack.lock'), p.o.stopTimeoutMs * 3, async () => {
    const clickhouseStop = stopService(p, 'clickhouse');
    const registry = await stopService(p, 'registry');
    progress('registry', registry);
    const kafka = await stopService(p, 'kafka');
    progress('kafka', kafka);
    const clickhouse = await clickhouseStop;
    progress('clickhouse', clickhouse);
    return { kafka, registry, clickhouse };
  });
}

/** Health of the three endpoints (local or given), checked in parallel. */
export async function stackStatus(options: StackOptions = {}): Promise<StackStatus> {
  const p = plan(options);
  const { o, endpoints } = p;
  const security = securityOf(p, { kafka: !o.kafkaBrokers, registry: !o.schemaRegistryUrl, clickhouse: !o.clickhouseUrl });
  const [kafka, registry, version] = await Promise.all([
    kafkaHealthy(endpoints.brokers, { security: security.kafka }),
    registryHealthy(endpoints.registryUrl, 3_000, security.registry),
    clickhouseVersion(endpoints.clickhouseUrl, 3_000, security.clickhouse),
  ]);
  return {
    kafka: { up: kafka, brokers: endpoints.brokers },
    registry: { up: registry, url: endpoints.registryUrl },
    clickhouse: version === undefined ? { up: false, url: endpoints.clickhouseUrl } : { up: true, url: endpoints.clickhouseUrl, version },
  };
}

/** Pids of the running services this home manages (for tests and `status`; Kafka: its first node's). */
export function stackPids(options: StackOptions = {}): Record<ServiceName, number | undefined> {
  const p = plan(options);
  const first = (s: ServiceName): number | undefined =>
    instancesOf(p, s)
      .map((i) => readLivePid(i.pidFile, i.marker))
      .find((pid) => pid !== undefined);
  return { kafka: first('kafka'), registry: first('registry'), clickhouse: first('clickhouse') };
}

/** Pid of each Kafka node this home manages, node 1 first (undefined where one is not running). */
export function kafkaNodePids(options: StackOptions = {}): Array<number | undefined> {
  const p = plan(options);
  return instancesOf(p, 'kafka').map((i) => readLivePid(i.pidFile, i.marker));
}

/**
 * The settings a service needs to reach this stack, as `infra up` prints them for export: the
 * three endpoints, and for a secured stack its logins, every password as the file that holds it.
 */
export function clientSettings(options: StackOptions, endpoints: StackEndpoints): Record<string, string> {
  const p = plan(options);
  const base = { KAFKA_BROKERS: endpoints.brokers, SCHEMA_REGISTRY_URL: endpoints.registryUrl, CLICKHOUSE_URL: endpoints.clickhouseUrl };
  return p.o.secure ? { ...secureSettings(p.secure, endpoints), ...base } : base;
}
