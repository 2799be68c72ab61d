/**
 * Kafka, the Schema Registry and ClickHouse in containers (testcontainers), for machines that
 * have a Docker engine. The project's CI machines have none: there `ensureStack` uses the
 * native stack, and this file only answers "is there an engine?" — quickly, with a bound,
 * without loading testcontainers.
 *
 * Images match infra/docker-compose.yml. testcontainers is imported lazily, on the container
 * path only (its import alone costs time, and the native path must not pay it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest, type RequestOptions as HttpsRequestOptions } from 'node:https';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { clickhouseVersion, kafkaHealthy, registryHealthy } from '../../infra/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/errors.ts';
import { waitFor } from './wait-for.ts';

export const KAFKA_IMAGE = 'apache/kafka:4.1.1';
export const REGISTRY_IMAGE = 'apicurio/apicurio-registry:3.0.9';
export const CLICKHOUSE_IMAGE = 'clickhouse/clickhouse-server:25.8';

type Env = Readonly<Record<string, string | undefined>>;

// ---------------------------------------------------------------------------------------------
// Is a Docker engine reachable?

/** A Docker engine that answered `GET /_ping`. */
export interface DockerEngine {
  /** Its address in DOCKER_HOST form: `unix:///var/run/docker.sock`, `tcp://host:2375`, `npipe:////./pipe/docker_engine`. */
  dockerHost: string;
  /** Where the address came from (the order testcontainers itself follows). */
  source: 'tc.host' | 'DOCKER_HOST' | 'docker.host' | 'socket';
}

/** The outcome of a probe: the engine found, and one line per address tried (for an error message). */
export interface DockerProbe {
  engine: DockerEngine | undefined;
  tried: string[];
}

export interface DetectDockerOptions {
  /** Where DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH and XDG_RUNTIME_DIR are read. @default process.env */
  env?: Env;
  /** Bound of the whole probe (every address is pinged in parallel). @default 1_500 */
  timeoutMs?: number;
  /** Sockets tried when no address is configured. @default {@link defaultDockerSockets} */
  sockets?: readonly string[];
  /** testcontainers' user config (`tc.host`, `docker.host`, `docker.tls.verify`, `docker.cert.path`). @default ~/.testcontainers.properties */
  propertiesFile?: string;
}

/** Where Docker, Docker Desktop, rootless Docker, Colima, Rancher Desktop and OrbStack put their socket. */
export function defaultDockerSockets(env: Env = process.env, home = homedir()): string[] {
  if (process.platform === 'win32') return ['//./pipe/docker_engine'];
  const xdg = env.XDG_RUNTIME_DIR;
  let uid: number | undefined;
  try {
    uid = userInfo().uid;
  } catch {
    uid = undefined; // no passwd entry (some containers): skip /run/user/<uid>
  }
  const sockets = [
    '/var/run/docker.sock',
    xdg && join(xdg, 'docker.sock'),
    xdg && join(xdg, '.docker', 'run', 'docker.sock'),
    join(home, '.docker', 'run', 'docker.sock'),
    join(home, '.docker', 'desktop', 'docker.sock'),
    uid !== undefined && uid >= 0 && `/run/user/${uid}/docker.sock`,
    join(home, '.colima', 'default', 'docker.sock'),
    join(home, '.colima', 'docker.sock'),
    join(home, '.rd', 'docker.sock'),
    join(home, '.orbstack', 'run', 'docker.sock'),
  ];
  return [...new Set(sockets.filter((s): s is string => typeof s === 'string' && s !== ''))];
}

/** `key=value` (or `key: value`) lines of a Java properties file; {} when there is none. */
function readProperties(file: string): Record<string, string> {
  if (!existsSync(file)) return {};
  const out: Record<string, string> = {};
  for (const raw of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const m = /^([^=:\s]+)\s*[=:]\s*(.*)$/.exec(line);
    if (m) out[m[1]] = m[2].trim();
  }
  return out;
}

/**
 * Finds a Docker engine that answers `GET /_ping` with `OK` within `timeoutMs`. A configured
 * address (`tc.host` in ~/.testcontainers.properties, then DOCKER_HOST, then `docker.host`) is
 * the only one tried; otherwise every known socket that exists is, and the first in
 * {@link defaultDockerSockets}' order wins. With no socket on disk this does no I/O beyond
 * a few `stat`s, so the native path pays nothing.
 */
export async function detectDockerEngine(options: DetectDockerOptions = {}): Promise<DockerProbe> {
  const env = options.env ?? process.env;
  const timeoutMs = options.timeoutMs ?? 1_500;
  const props = readProperties(options.propertiesFile ?? join(homedir(), '.testcontainers.properties'));
  const tls = (env.DOCKER_TLS_VERIFY ?? props['docker.tls.verify']) === '1';
  const certPath = env.DOCKER_CERT_PATH ?? props['docker.cert.path'];

  const configured: Array<{ host: string; source: DockerEngine['source'] }> = [];
  if (props['tc.host']) configured.push({ host: props['tc.host'], source: 'tc.host' });
  if (env.DOCKER_HOST) configured.push({ host: env.DOCKER_HOST, source: 'DOCKER_HOST' });
  else if (props['docker.host']) configured.push({ host: props['docker.host'], source: 'docker.host' });

  const candidates = configured.length
    ? configured
    : (options.sockets ?? defaultDockerSockets(env)).map((s) => ({
        host: s.startsWith('//') ? `npipe:${s}` : `unix://${s}`,
        source: 'socket' as const,
      }));
  const deadline = AbortSignal.timeout(timeoutMs);
  const results = await Promise.all(
    candidates.map(async (c) => {
      const target = pingTarget(c.host, c.source === 'DOCKER_HOST' || c.source === 'docker.host' ? { tls, certPath } : { tls: false });
      if (typeof target === 'string') return target;
      if (target.socketPath !== undefined && !target.socketPath.startsWith('\\\\') && !existsSync(target.socketPath)) {
        return 'no such socket';
      }
      return pingDocker(target, deadline, timeoutMs);
    }),
  );
  const tried = candidates.map((c, i) => `${c.host} (${c.source}): ${results[i] ?? 'OK'}`);
  const hit = candidates.findIndex((_, i) => results[i] === undefined);
  return { engine: hit < 0 ? undefined : { dockerHost: candidates[hit].host, source: candidates[hit].source }, tried };
}

type PingTarget = RequestOptions & Pick<HttpsRequestOptions, 'ca' | 'cert' | 'key'> & { https: boolean };

/** Request options that reach a DOCKER_HOST-style address, or why it cannot be pinged. */
function pingTarget(host: string, t: { tls: boolean; certPath?: string | undefined }): PingTarget | string {
  let url: URL;
  try {
    url = new URL(host);
  } catch {
    return 'not a URL';
  }
  switch (url.protocol) {
    case 'unix:':
      return { socketPath: url.pathname, https: false };
    case 'npipe:':
      // npipe:////./pipe/docker_engine → \\.\pipe\docker_engine
      return { socketPath: url.pathname.replace(/\//g, '\\'), https: false };
    case 'tcp:':
    case 'http:':
    case 'https:': {
      const https = url.protocol === 'https:' || (url.protocol === 'tcp:' && t.tls);
      const target: PingTarget = { host: url.hostname, port: Number(url.port || (https ? 2376 : 2375)), https };
      if (https && t.certPath) {
        try {
          target.ca = readFileSync(join(t.certPath, 'ca.pem'));
          target.cert = readFileSync(join(t.certPath, 'cert.pem'));
          target.key = readFileSync(join(t.certPath, 'key.pem'));
        } catch (err) {
          return `TLS certificates unreadable in ${t.certPath}: ${(err as Error).message}`;
        }
      }
      return target;
    }
    default:
      return `${url.protocol}// addresses are not probed (forward the socket and point DOCKER_HOST at it)`;
  }
}

/** undefined when the engine answered `OK`, else why not. */
function pingDocker(target: PingTarget, deadline: AbortSignal, timeoutMs: number): Promise<string | undefined> {
  const { https, ...options } = target;
  return new Promise((resolve) => {
    const req = (https ? httpsRequest : httpRequest)({ ...options, method: 'GET', path: '/_ping', signal: deadline }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 64) body += chunk;
      });
      res.on('end', () =>
        resolve(res.statusCode === 200 && body.trim() === 'OK' ? undefined : `HTTP ${res.statusCode} ${body.trim().slice(0, 40)}`),
      );
      res.on('error', (err) => resolve(err.message));
    });
    req.on('error', (err) => resolve(deadline.aborted ? `no answer within ${timeoutMs} ms` : err.message));
    req.end();
  });
}

/** Throws the one clear error of `TURNSTREAM_TEST_STACK=containers` without an engine. */
export function noDockerEngineError(probe: DockerProbe): TurnstreamError {
  const tried = probe.tried.length ? probe.tried.map((t) => `\n  ${t}`).join('') : '\n  (no address to try)';
  return new TurnstreamError(
    ErrorCodes.PREREQUISITE,
    'TURNSTREAM_TEST_STACK=containers, but no Docker engine answers GET /_ping. Tried:' +
      tried +
      '\nStart Docker (or set DOCKER_HOST), or run the tests with TURNSTREAM_TEST_STACK=auto or native.',
  );
}

// ---------------------------------------------------------------------------------------------
// Kafka (apache/kafka, KRaft, one node)

/** Client port inside the container (mapped to a random host port), inter-broker and controller ports. */
export const KAFKA_CLIENT_PORT = 9092;
const KAFKA_BROKER_PORT = 9093;
const KAFKA_CONTROLLER_PORT = 9094;
const KAFKA_STARTER = '/tmp/turnstream-kafka-start.sh';
const KAFKA_WAITING = 'turnstream: waiting for the starter script';

/**
 * The broker's settings, as apache/kafka's env convention (KAFKA_FOO_BAR → foo.bar). Any
 * KAFKA_* variable makes the image ignore its default server.properties, so this is the whole
 * config; it mirrors the native stack's (infra/kafka.ts): one node, factor-1 internal topics,
 * no auto-created topics.
 */
export function kafkaContainerEnvironment(): Record<string, string> {
  return {
    CLUSTER_ID: '4L6g3nShT-eMCtK--X86sw',
    KAFKA_NODE_ID: '1',
    KAFKA_PROCESS_ROLES: 'broker,controller',
    KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${KAFKA_CLIENT_PORT},BROKER://0.0.0.0:${KAFKA_BROKER_PORT},CONTROLLER://0.0.0.0:${KAFKA_CONTROLLER_PORT}`,
    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT',
    KAFKA_INTER_BROKER_LISTENER_NAME: 'BROKER',
    KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
    KAFKA_CONTROLLER_QUORUM_VOTERS: `1@localhost:${KAFKA_CONTROLLER_PORT}`,
    KAFKA_LOG_DIRS: '/tmp/kraft-combined-logs',
    KAFKA_NUM_PARTITIONS: '1',
    KAFKA_DEFAULT_REPLICATION_FACTOR: '1',
    KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
    KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
    KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
    KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: '1',
    KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: '1',
    KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    // As infra/kafka.ts: the only broker must not fence itself when its controller stalls.
    KAFKA_BROKER_SESSION_TIMEOUT_MS: '30000',
    KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    KAFKA_LOG_RETENTION_HOURS: '168',
  };
}

/**
 * The container's command: wait for the starter script. The host port of the client listener
 * is known only once the container runs, and Kafka must advertise it (a client bootstraps on
 * the mapped port, then connects to what the broker advertises) — so the script that exports
 * KAFKA_ADVERTISED_LISTENERS is copied in after the start, as testcontainers-java's
 * apache/kafka KafkaContainer does.
 */
export function kafkaContainerCommand(): string[] {
  return ['sh', '-c', `echo '${KAFKA_WAITING}'; while [ ! -f ${KAFKA_STARTER} ]; do sleep 0.1; done; exec ${KAFKA_STARTER}`];
}

/** The starter script: `bootstrap` is `<host>:<mapped port>`, `hostname` the container's own. */
export function kafkaStarterScript(bootstrap: string, hostname: string): string {
  const advertised = `PLAINTEXT://${bootstrap},BROKER://${hostname}:${KAFKA_BROKER_PORT}`;
  return `#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS=${advertised}\nexec /etc/kafka/docker/run\n`;
}

// ---------------------------------------------------------------------------------------------
// Starting and stopping

export interface ContainerStackOptions {
  /** The engine {@link detectDockerEngine} found. */
  engine: DockerEngine;
  /** Services to start; the others are given elsewhere. @default all three */
  services?: { kafka?: boolean; registry?: boolean; clickhouse?: boolean };
  /**
   * testcontainers' reuse: the containers are kept when the process ends and shared by later
   * processes (each test file runs in its own) and runs, like the native stack.
   * @default false (each process starts its own and they are removed when it ends)
   */
  reuse?: boolean;
  /** How long each service may take to become healthy (an image pull included). @default 300_000 */
  startTimeoutMs?: number;
  /** A line of progress. @default nothing */
  onProgress?: (message: string) => void;
}

export interface ContainerStack {
  /** `host:port` of Kafka, when started. */
  brokers: string | undefined;
  /** The registry's Confluent-compatible URL, when started. */
  registryUrl: string | undefined;
  /** ClickHouse's HTTP URL, when started. */
  clickhouseUrl: string | undefined;
  /** Stops and removes what was started (nothing when reused). Idempotent. */
  stop(): Promise<void>;
}

type Testcontainers = typeof import('testcontainers');
type Started = import('testcontainers').StartedTestContainer;

/**
 * Starts the services in containers, in parallel, and waits until each answers from this host
 * (Kafka: a metadata request; registry: `/subjects`; ClickHouse: a version query). Without
 * reuse they are stopped when the process ends: by `stop()` on `beforeExit`, and — when the
 * process is killed or exits forcibly (`--test-force-exit`) — by testcontainers' reaper (Ryuk),
 * which removes a session's containers once its process is gone.
 */
export async function startContainers(options: ContainerStackOptions): Promise<ContainerStack> {
  const want = { kafka: true, registry: true, clickhouse: true, ...options.services };
  const timeoutMs = options.startTimeoutMs ?? 300_000;
  const progress = options.onProgress ?? (() => {});
  // testcontainers finds /var/run/docker.sock and Docker Desktop's sockets itself, but not
  // Colima's, Rancher's or OrbStack's: name the one found.
  if (options.engine.source === 'socket' && !process.env.DOCKER_HOST) process.env.DOCKER_HOST = options.engine.dockerHost;
  const tc: Testcontainers = await import('testcontainers');

  const started: Started[] = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (options.reuse) return;
      const results = await Promise.allSettled(started.map((c) => c.stop()));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'could not stop a test container', { cause: failed.reason });
    })());
  const track = (c: Started): Started => {
    started.push(c);
    return c;
  };
  if (!options.reuse) {
    process.once('beforeExit', () => {
      stop().catch((err: unknown) => process.stderr.write(`# stack containers: ${(err as Error).message}\n`));
    });
  }

  const withCommon = <T extends import('testcontainers').GenericContainer>(c: T, service: string): T => {
    c.withStartupTimeout(timeoutMs).withLabels({ 'org.turnstream.test-stack': service });
    if (options.reuse) c.withReuse();
    return c;
  };

  const kafka = async (): Promise<string> => {
    progress(`starting ${KAFKA_IMAGE}`);
    const c = track(
      await withCommon(
        new tc.GenericContainer(KAFKA_IMAGE)
          .withExposedPorts(KAFKA_CLIENT_PORT)
          .withEnvironment(kafkaContainerEnvironment())
          .withCommand(kafkaContainerCommand())
          .withWaitStrategy(tc.Wait.forLogMessage(KAFKA_WAITING)),
        'kafka',
      ).start(),
    );
    const brokers = `${c.getHost()}:${c.getMappedPort(KAFKA_CLIENT_PORT)}`;
    // A reused container already runs its script (it waits no more); copying again is harmless.
    await c.copyContentToContainer([{ content: kafkaStarterScript(brokers, c.getHostname()), target: KAFKA_STARTER, mode: 0o755 }]);
    await healthy('Kafka', c, brokers, () => kafkaHealthy(brokers), timeoutMs);
    return brokers;
  };

  const registry = async (): Promise<string> => {
    progress(`starting ${REGISTRY_IMAGE}`);
    const c = track(
      await withCommon(
        new tc.GenericContainer(REGISTRY_IMAGE)
          .withExposedPorts(8080)
          // In-memory H2 (Apicurio 3's default storage): throw-away schemas, no Kafka needed.
          .withEnvironment({ APICURIO_STORAGE_KIND: 'sql', APICURIO_STORAGE_SQL_KIND: 'h2', QUARKUS_HTTP_ACCESS_LOG_ENABLED: 'false' })
          .withWaitStrategy(tc.Wait.forHttp('/apis/ccompat/v7/subjects', 8080).forStatusCode(200)),
        'registry',
      ).start(),
    );
    const url = `http://${c.getHost()}:${c.getMappedPort(8080)}/apis/ccompat/v7`;
    await healthy('Schema Registry', c, url, () => registryHealthy(url), timeoutMs);
    return url;
  };

  const clickhouse = async (): Promise<string> => {
    progress(`starting ${CLICKHOUSE_IMAGE}`);
    const c = track(
      await withCommon(
        new tc.GenericContainer(CLICKHOUSE_IMAGE)
          .withExposedPorts(8123)
          // The default user without a password, reachable from the host (as the native stack).
          .withEnvironment({ CLICKHOUSE_SKIP_USER_SETUP: '1' })
          .withUlimits({ nofile: { soft: 262144, hard: 262144 } })
          .withWaitStrategy(tc.Wait.forHttp('/ping', 8123).forStatusCode(200)),
        'clickhouse',
      ).start(),
    );
    const url = `http://${c.getHost()}:${c.getMappedPort(8123)}`;
    await healthy('ClickHouse', c, url, async () => (await clickhouseVersion(url)) !== undefined, timeoutMs);
    return url;
  };

  const skip = async (): Promise<undefined> => undefined;
  const results = await Promise.allSettled([
    want.kafka ? kafka() : skip(),
    want.registry ? registry() : skip(),
    want.clickhouse ? clickhouse() : skip(),
  ]);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stop().catch(() => {}); // the start failure is the error to report
    throw failed.reason;
  }
  const value = (i: number): string | undefined => (results[i] as PromiseFulfilledResult<string | undefined>).value;
  progress(`up: ${[value(0), value(1), value(2)].filter(Boolean).join(', ')}`);
  return { brokers: value(0), registryUrl: value(1), clickhouseUrl: value(2), stop };
}

/** Polls `check` from this host until it passes; the container's wait strategy only saw the inside. */
async function healthy(name: string, c: Started, where: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  await waitFor(`${name} at ${where}`, check, { timeoutMs, intervalMs: 500 }).catch((err: Error) => {
    throw new TurnstreamError(
      ErrorCodes.UNAVAILABLE,
      `${name} in container ${c.getId().slice(0, 12)} does not answer at ${where} after ${Math.round(timeoutMs / 1000)} s ` +
        `(docker logs ${c.getId().slice(0, 12)}; a reused container that was restarted may advertise an old port: docker rm -f it)`,
      { cause: err },
    );
  });
}
