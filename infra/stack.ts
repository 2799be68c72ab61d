/**
 * up / down / status of the whole local stack. `up` is idempotent: a service whose pid
 * is alive and healthy is reused, so a second `up` takes a moment. Endpoints given in
 * the options (an existing Kafka, registry or ClickHouse) are only health-checked.
 */
import { join } from 'node:path';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { clickhouseCommand, clickhouseVersion, prepareClickhouse } from './clickhouse.ts';
import { installKafka, kafkaCommand, kafkaHealthy, prepareKafka } from './kafka.ts';
import { withLock } from './lock.ts';
import type { StackEndpoints, StackOptions } from './options.ts';
import { preflight } from './preflight.ts';
import { findClickhouse } from './prerequisites.ts';
import { readLivePid, spawnDetached, stopByPidFile, waitFor } from './process.ts';
import { installRegistry, registryCommand, registryHealthy } from './registry.ts';
import { markers, ownEndpoints, plan, VARIABLE, type Plan, type ServiceName, type StackReporter } from './stack-plan.ts';

export type { ServiceName } from './stack-plan.ts';

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

/** Starts what is not running (or reuses it) and waits until all three are healthy. */
export async function stackUp(options: StackOptions = {}): Promise<StackUpResult> {
  const p = plan(options);
  const { o, endpoints } = p;
  const t0 = Date.now();
  const progress: StackReporter = (service, message) => o.onProgress({ service, message, elapsedMs: Date.now() - t0 });
  return withLock(join(o.home, 'pids', 'stack.lock'), o.startTimeoutMs, async () => {
    const { local, running } = await survey(p, progress);
    await preflight(p, (s) => local[s] && running[s] === undefined, progress);
    const services = await startAll(p, local, running, progress);
    return { ...endpoints, services, ms: Date.now() - t0 };
  });
}

/** Which services this home runs (`local`), and the pids of those already running. */
interface Survey {
  local: Record<ServiceName, boolean>;
  running: Record<ServiceName, number | undefined>;
}

async function survey(p: Plan, progress: StackReporter): Promise<Survey> {
  const { o } = p;
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
  const healthy = healthChecks(p.endpoints);
  for (const s of Object.keys(own) as ServiceName[]) {
    if (own[s] && running[s] === undefined && (await healthy[s]().catch(() => false))) {
      local[s] = false;
      progress(s, `${VARIABLE[s]} answers, though not from this home: used as given`);
    }
  }
  return { local, running };
}

const healthChecks = (endpoints: StackEndpoints): Record<ServiceName, () => Promise<boolean>> => ({
  kafka: () => kafkaHealthy(endpoints.brokers),
  registry: () => registryHealthy(endpoints.registryUrl),
  clickhouse: async () => (await clickhouseVersion(endpoints.clickhouseUrl)) !== undefined,
});

/** Brings the three services up, Kafka and ClickHouse at once and the registry after Kafka. */
async function startAll(
  p: Plan,
  local: Survey['local'],
  running: Survey['running'],
  progress: StackReporter,
): Promise<Record<ServiceName, ServiceReport>> {
  const healthy = healthChecks(p.endpoints);
  const launch = launchers(p, progress);
  const up = (s: ServiceName): Promise<ServiceReport> => bringUp(p, s, running[s], local[s], healthy[s], launch[s], progress);
  const kafkaUp = up('kafka');
  const clickhouseUp = up('clickhouse');
  // The registry's storage is Kafka: start it once Kafka answers.
  const registryUp = kafkaUp.then(() => up('registry'));
  const [kafka, registry, clickhouse] = await Promise.all([kafkaUp, registryUp, clickhouseUp]);
  return { kafka, registry, clickhouse };
}

/** Per service, what to do before its first start (install, format, configure) and how to launch it. */
function launchers(p: Plan, progress: StackReporter): Record<ServiceName, () => Promise<Launch>> {
  const { o, endpoints } = p;
  return {
    kafka: async () => {
      if (await installKafka(o, p.kafka)) progress('kafka', `downloaded Kafka jars into ${p.kafka.libs}`);
      if (await prepareKafka(o, p.kafka)) progress('kafka', `formatted storage in ${p.kafka.dataDir}`);
      return { ...kafkaCommand(o, p.kafka), logFile: p.kafka.stdoutLog, pidFile: p.kafka.pidFile };
    },
    registry: async () => {
      if (await installRegistry(o, p.registry)) progress('registry', `unpacked Apicurio into ${p.registry.appDir}`);
      return { ...registryCommand(o, p.registry, endpoints.brokers), logFile: p.registry.stdoutLog, pidFile: p.registry.pidFile };
    },
    clickhouse: async () => {
      const found = findClickhouse(o.clickhouseBinary);
      if (!found) throw new TurnstreamError(ErrorCodes.PREREQUISITE, 'clickhouse-server not found');
      prepareClickhouse(o, p.clickhouse);
      return { ...clickhouseCommand(found, p.clickhouse), logFile: p.clickhouse.stdoutLog, pidFile: p.clickhouse.pidFile };
    },
  };
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
