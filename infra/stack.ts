/**
 * up / down / status of the whole local stack. `up` is idempotent: a service whose pid
 * is alive and healthy is reused, so a second `up` takes a moment. Endpoints given in
 * the options (an existing Kafka, registry or ClickHouse) are only health-checked.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCodes, TurnstreamError } from '../core/errors.ts';
import { clickhouseCommand, clickhousePaths, clickhouseVersion, prepareClickhouse } from './clickhouse.ts';
import { installKafka, kafkaCommand, kafkaHealthy, kafkaPaths, prepareKafka } from './kafka.ts';
import { withLock } from './lock.ts';
import {
  endpointsOf,
  resolveStackOptions,
  type ResolvedStackOptions,
  type StackEndpoints,
  type StackOptions,
  type StackProgress,
} from './options.ts';
import { assertPortsFree, type PortClaim } from './ports.ts';
import { canUseApt, installClickhouseWithApt, shouldInstallClickhouse } from './clickhouse-install.ts';
import { checkPrerequisites, findClickhouse, type PrerequisiteNeeds } from './prerequisites.ts';
import { readLivePid, spawnDetached, stopByPidFile, waitFor } from './process.ts';
import { installRegistry, registryCommand, registryHealthy, registryPaths } from './registry.ts';

export type ServiceName = 'kafka' | 'registry' | 'clickhouse';

/** Health of the three services, in the shape `turnstream infra status --json` prints. */
export interface StackStatus {
  kafka: { up: boolean; brokers: string };
  registry: { up: boolean; url: string };
  clickhouse: { up: boolean; url: string; version?: string };
}

/** What `up` did for one service. */
export interface ServiceReport {
  /** `started` now, `reused` a running one we manage, or `external` (given endpoint). */
  state: 'started' | 'reused' | 'external';
  /** Pid of the process we manage; undefined for an external service. */
  pid: number | undefined;
  /** Milliseconds until the service was healthy. */
  ms: number;
  /** Log file of a managed service. */
  logFile: string | undefined;
}

export interface StackUpResult extends StackEndpoints {
  services: Record<ServiceName, ServiceReport>;
  /** Total milliseconds of `up`. */
  ms: number;
}

interface Plan {
  o: ResolvedStackOptions;
  endpoints: StackEndpoints;
  kafka: ReturnType<typeof kafkaPaths>;
  registry: ReturnType<typeof registryPaths>;
  clickhouse: ReturnType<typeof clickhousePaths>;
}

function plan(options: StackOptions): Plan {
  const o = resolveStackOptions(options);
  return { o, endpoints: endpointsOf(o), kafka: kafkaPaths(o), registry: registryPaths(o), clickhouse: clickhousePaths(o) };
}

/** Markers that tie a pid to this home (pids are reused by the OS). */
const markers = (p: Plan): Record<ServiceName, string> => ({
  kafka: p.kafka.serverProperties,
  registry: p.registry.dataDir,
  clickhouse: p.clickhouse.configFile,
});

/** The variable that names a given endpoint. */
const VARIABLE: Record<ServiceName, string> = { kafka: 'KAFKA_BROKERS', registry: 'SCHEMA_REGISTRY_URL', clickhouse: 'CLICKHOUSE_URL' };

const sameHost = (url: string): string => url.replace(/\blocalhost\b/g, '127.0.0.1').replace(/\/+$/, '');

/**
 * Given endpoints that are this home's own services: the address the local stack uses, and a
 * service this home has set up (its config on disk). `infra up` prints the endpoints to export,
 * and with them exported a killed local Kafka would otherwise be taken for someone else's and
 * never started again; these are managed as local instead.
 */
function ownEndpoints(p: Plan): Record<ServiceName, boolean> {
  const o = p.o;
  const mine = endpointsOf({ ...o, kafkaBrokers: undefined, schemaRegistryUrl: undefined, clickhouseUrl: undefined });
  return {
    kafka: !!o.kafkaBrokers && sameHost(o.kafkaBrokers) === sameHost(mine.brokers) && existsSync(p.kafka.serverProperties),
    // The registry keeps its schemas in this home's Kafka: a home with that Kafka runs it.
    registry: !!o.schemaRegistryUrl && sameHost(o.schemaRegistryUrl) === sameHost(mine.registryUrl) && existsSync(p.kafka.serverProperties),
    clickhouse: !!o.clickhouseUrl && sameHost(o.clickhouseUrl) === sameHost(mine.clickhouseUrl) && existsSync(p.clickhouse.configFile),
  };
}

/** Starts what is not running (or reuses it) and waits until all three are healthy. */
export async function stackUp(options: StackOptions = {}): Promise<StackUpResult> {
  const p = plan(options);
  const { o, endpoints } = p;
  const t0 = Date.now();
  const progress = (service: StackProgress['service'], message: string): void =>
    o.onProgress({ service, message, elapsedMs: Date.now() - t0 });
  return withLock(join(o.home, 'pids', 'stack.lock'), o.startTimeoutMs, async () => {
    const mark = markers(p);
    const own = ownEndpoints(p);
    if (own.kafka || own.registry || own.clickhouse) {
      const which = (Object.keys(own) as ServiceName[]).filter((s) => own[s]);
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
    const running: Record<ServiceName, number | undefined> = {
      kafka: local.kafka ? readLivePid(p.kafka.pidFile, mark.kafka) : undefined,
      registry: local.registry ? readLivePid(p.registry.pidFile, mark.registry) : undefined,
      clickhouse: local.clickhouse ? readLivePid(p.clickhouse.pidFile, mark.clickhouse) : undefined,
    };
    // A given endpoint on this home's ports that this home is not running, but that answers, is
    // another home's stack on the same ports (a second checkout): used as given, not restarted.
    const healthy: Record<ServiceName, () => Promise<boolean>> = {
      kafka: () => kafkaHealthy(endpoints.brokers),
      registry: () => registryHealthy(endpoints.registryUrl),
      clickhouse: async () => (await clickhouseVersion(endpoints.clickhouseUrl)) !== undefined,
    };
    for (const s of Object.keys(own) as ServiceName[]) {
      if (own[s] && running[s] === undefined && (await healthy[s]().catch(() => false))) {
        local[s] = false;
        progress(s, `${VARIABLE[s]} answers, though not from this home: used as given`);
      }
    }
    const toStart = (s: ServiceName): boolean => local[s] && running[s] === undefined;

    // Every missing program and every taken port in one message, before starting anything.
    const needs: PrerequisiteNeeds = {};
    if (toStart('kafka') || toStart('registry')) needs.java = o.javaBinary;
    if (
      (toStart('kafka') && !existsSync(join(p.kafka.libs, '.pom-sha256'))) ||
      (toStart('registry') && !existsSync(p.registry.runnerJar))
    ) {
      needs.mvn = o.mavenBinary;
    }
    if (toStart('clickhouse')) needs.clickhouse = o.clickhouseBinary ?? true;
    const install = { needed: toStart('clickhouse'), binaryGiven: o.clickhouseBinary !== undefined, enabled: o.installClickhouse };
    if (
      shouldInstallClickhouse({
        ...install,
        found: install.needed && findClickhouse(o.clickhouseBinary) !== undefined,
        canApt: install.needed && canUseApt(),
      })
    ) {
      progress(
        'clickhouse',
        "clickhouse-server not found: installing Debian's clickhouse-server and clickhouse-client with apt-get (running as root)",
      );
      await installClickhouseWithApt();
    }
    checkPrerequisites(needs);
    const claims: PortClaim[] = [];
    if (toStart('kafka')) {
      claims.push(
        { service: 'Kafka', port: o.kafkaPort, flag: '--kafka-port' },
        { service: 'Kafka controller', port: o.kafkaControllerPort, flag: '--kafka-controller-port' },
      );
    }
    if (toStart('registry')) claims.push({ service: 'Schema Registry', port: o.registryPort, flag: '--registry-port' });
    if (toStart('clickhouse')) {
      claims.push(
        { service: 'ClickHouse HTTP', port: o.clickhousePort, flag: '--clickhouse-port' },
        { service: 'ClickHouse TCP', port: o.clickhouseTcpPort, flag: '--clickhouse-tcp-port' },
      );
    }
    await assertPortsFree(o.host, claims);

    const kafkaUp = bringUp(
      p,
      'kafka',
      running.kafka,
      local.kafka,
      () => kafkaHealthy(endpoints.brokers),
      async () => {
        if (await installKafka(o, p.kafka)) progress('kafka', `downloaded Kafka jars into ${p.kafka.libs}`);
        if (await prepareKafka(o, p.kafka)) progress('kafka', `formatted storage in ${p.kafka.dataDir}`);
        return { ...kafkaCommand(o, p.kafka), logFile: p.kafka.stdoutLog, pidFile: p.kafka.pidFile };
      },
      progress,
    );
    const clickhouseUp = bringUp(
      p,
      'clickhouse',
      running.clickhouse,
      local.clickhouse,
      async () => (await clickhouseVersion(endpoints.clickhouseUrl)) !== undefined,
      async () => {
        const found = findClickhouse(o.clickhouseBinary);
        if (!found) throw new TurnstreamError(ErrorCodes.PREREQUISITE, 'clickhouse-server not found');
        prepareClickhouse(o, p.clickhouse);
        return { ...clickhouseCommand(found, p.clickhouse), logFile: p.clickhouse.stdoutLog, pidFile: p.clickhouse.pidFile };
      },
      progress,
    );
    // The registry's storage is Kafka: start it once Kafka answers.
    const registryUp = kafkaUp.then(() =>
      bringUp(
        p,
        'registry',
        running.registry,
        local.registry,
        () => registryHealthy(endpoints.registryUrl),
        async () => {
          if (await installRegistry(o, p.registry)) progress('registry', `unpacked Apicurio into ${p.registry.appDir}`);
          return { ...registryCommand(o, p.registry, endpoints.brokers), logFile: p.registry.stdoutLog, pidFile: p.registry.pidFile };
        },
        progress,
      ),
    );
    const [kafka, registry, clickhouse] = await Promise.all([kafkaUp, registryUp, clickhouseUp]);
    return { ...endpoints, services: { kafka, registry, clickhouse }, ms: Date.now() - t0 };
  });
}

interface Launch {
  command: string;
  args: string[];
  logFile: string;
  pidFile: string;
}

const LABEL: Record<ServiceName, string> = { kafka: 'Kafka', registry: 'Schema Registry', clickhouse: 'ClickHouse' };

async function bringUp(
  p: Plan,
  service: ServiceName,
  runningPid: number | undefined,
  isLocal: boolean,
  healthy: () => Promise<boolean>,
  prepare: () => Promise<Launch>,
  progress: (service: ServiceName, message: string) => void,
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
    return { state: 'external', pid: undefined, ms: Date.now() - t, logFile: undefined };
  }
  const wait = (pid: number, logFile: string): Promise<void> =>
    waitFor(healthy, {
      name: LABEL[service],
      timeoutMs: p.o.startTimeoutMs,
      pid,
      logFile,
      onWaiting: (ms) => progress(service, `waiting for ${where} (${Math.round(ms / 1000)} s)`),
    });
  if (runningPid !== undefined) {
    const logFile = logOf(p, service);
    await wait(runningPid, logFile);
    progress(service, `reusing pid ${runningPid} at ${where}`);
    return { state: 'reused', pid: runningPid, ms: Date.now() - t, logFile };
  }
  const launch = await prepare();
  const pid = spawnDetached({ ...launch, cwd: p.o.home, marker: markers(p)[service] });
  progress(service, `started pid ${pid}, log ${launch.logFile}`);
  await wait(pid, launch.logFile);
  const ms = Date.now() - t;
  progress(service, `up at ${where} in ${(ms / 1000).toFixed(1)} s`);
  return { state: 'started', pid, ms, logFile: launch.logFile };
}

const logOf = (p: Plan, s: ServiceName): string =>
  s === 'kafka'
    ? join(p.kafka.logDir, 'server.log')
    : s === 'registry'
      ? p.registry.stdoutLog
      : join(p.clickhouse.logDir, 'clickhouse-server.log');

/** Stops the services this home manages (registry first, as it uses Kafka); returns the pids stopped. */
export async function stackDown(options: StackOptions = {}): Promise<Record<ServiceName, number | undefined>> {
  const p = plan(options);
  const t0 = Date.now();
  const mark = markers(p);
  const progress = (service: ServiceName, pid: number | undefined): void => {
    if (pid !== undefined) p.o.onProgress({ service, message: `stopped pid ${pid}`, elapsedMs: Date.now() - t0 });
  };
  return withLock(join(p.o.home, 'pids', 'stack.lock'), p.o.stopTimeoutMs * 3, async () => {
    const clickhouseStop = stopByPidFile(p.clickhouse.pidFile, p.o.stopTimeoutMs, mark.clickhouse);
    const registry = await stopByPidFile(p.registry.pidFile, p.o.stopTimeoutMs, mark.registry);
    progress('registry', registry);
    const kafka = await stopByPidFile(p.kafka.pidFile, p.o.stopTimeoutMs, mark.kafka);
    progress('kafka', kafka);
    const clickhouse = await clickhouseStop;
    progress('clickhouse', clickhouse);
    return { kafka, registry, clickhouse };
  });
}

/** Health of the three endpoints (local or given), checked in parallel. */
export async function stackStatus(options: StackOptions = {}): Promise<StackStatus> {
  const { endpoints } = plan(options);
  const [kafka, registry, version] = await Promise.all([
    kafkaHealthy(endpoints.brokers),
    registryHealthy(endpoints.registryUrl),
    clickhouseVersion(endpoints.clickhouseUrl),
  ]);
  return {
    kafka: { up: kafka, brokers: endpoints.brokers },
    registry: { up: registry, url: endpoints.registryUrl },
    clickhouse: version === undefined ? { up: false, url: endpoints.clickhouseUrl } : { up: true, url: endpoints.clickhouseUrl, version },
  };
}

/** Pids of the running services this home manages (for tests and `status`). */
export function stackPids(options: StackOptions = {}): Record<ServiceName, number | undefined> {
  const p = plan(options);
  const mark = markers(p);
  return {
    kafka: readLivePid(p.kafka.pidFile, mark.kafka),
    registry: readLivePid(p.registry.pidFile, mark.registry),
    clickhouse: readLivePid(p.clickhouse.pidFile, mark.clickhouse),
  };
}
