import { join, resolve } from 'node:path';
import { ErrorCodes, TurnstreamError, type Secret, type TlsOptions } from '../core/index.ts';
import type { RegistrySecurity } from '../schemas/index.ts';
import type { KafkaSecurity } from '../streams/index.ts';

/** Where the Schema Registry keeps its schemas. */
export type RegistryStorage = 'kafkasql' | 'mem';

/** A line of progress while the stack starts or stops. */
export interface StackProgress {
  service: 'kafka' | 'registry' | 'clickhouse' | 'stack';
  message: string;
  /** Milliseconds since the operation began. */
  elapsedMs: number;
}

/** How a client reaches a secured ClickHouse: a user and password, and whom it trusts over https. */
export interface ClickhouseSecurity {
  /** @default ClickHouse's `default` user */
  username?: string;
  password?: Secret;
  tls?: TlsOptions;
}

/** How the clients reach each service: TLS trust and credentials. */
export interface StackSecurity {
  kafka?: KafkaSecurity;
  registry?: RegistrySecurity;
  clickhouse?: ClickhouseSecurity;
}

/** Options of the local stack (Kafka, Schema Registry, ClickHouse). */
export interface StackOptions {
  /**
   * Folder of the stack's data, logs, pid files and generated configs. A secured stack or one of
   * several brokers lives in a folder of its own below it (`stacks/secure`, `stacks/brokers-3`,
   * `stacks/secure-brokers-3`), so it runs beside the plain one.
   * @default `<cwd>/.turnstream`
   */
  home?: string;
  /**
   * Start the local stack secured: Kafka with a SASL_SSL listener (SCRAM-SHA-256, SCRAM-SHA-512
   * and PLAIN logins) and mutual TLS between its nodes, the registry over https with basic auth,
   * ClickHouse over https with a password; the certificates signed by a CA written in the home,
   * the passwords generated there. Default ports are 100 above the plain ones. @default false
   */
  secure?: boolean;
  /**
   * Kafka nodes of the local stack, each broker and KRaft controller (a quorum of all). With 2 or
   * more, internal topics keep min(3, n) copies with 2 in sync, and the default ports are 200
   * above the plain ones. @default 1
   */
  brokerCount?: number;
  /**
   * How the clients reach given endpoints (`kafkaBrokers`, `schemaRegistryUrl`, `clickhouseUrl`):
   * for the health checks. The local stack's own is written in its home. @default plaintext, no login
   */
  security?: StackSecurity;
  /**
   * Folder where the Kafka jars and the Apicurio app are installed. Several homes (a
   * test's throw-away home, the developer's) can share one, so only one download is made.
   * @default the home
   */
  distDir?: string;
  /**
   * Address every service listens on and is reached at.
   * @default '127.0.0.1'
   */
  host?: string;
  /**
   * Kafka client port (PLAINTEXT, or SASL_SSL when secure) of the first node; node i (from 0)
   * listens on this + 2i. @default 9092 (+ the flavour's offset: 100 secure, 200 several brokers)
   */
  kafkaPort?: number;
  /** Kafka KRaft controller port of the first node; node i's is this + 2i. @default 9093 (+ offset) */
  kafkaControllerPort?: number;
  /** Schema Registry port (https when secure). @default 8081 (+ offset) */
  registryPort?: number;
  /**
   * `kafkasql` keeps the schemas in Kafka (topic `kafkasql-journal`), so they survive a
   * restart; `mem` keeps them in an in-memory H2 database, for throw-away runs.
   * @default 'kafkasql'
   */
  registryStorage?: RegistryStorage;
  /** ClickHouse HTTP port (https when secure). @default 8123 (+ offset) */
  clickhousePort?: number;
  /** ClickHouse native (TCP) port; a secured stack opens none. @default 9000 (+ offset) */
  clickhouseTcpPort?: number;
  /**
   * Kafka bootstrap servers of an existing cluster: when set, no Kafka is started and
   * this one is only health-checked.
   * @default undefined (start the local one)
   */
  kafkaBrokers?: string;
  /**
   * Confluent-compatible Schema Registry URL of an existing registry: when set, none is
   * started. @default undefined (start the local one)
   */
  schemaRegistryUrl?: string;
  /**
   * ClickHouse HTTP URL of an existing server: when set, none is started.
   * @default undefined (start the local one)
   */
  clickhouseUrl?: string;
  /** The `java` executable (Java 17 or later). @default 'java' from PATH */
  javaBinary?: string;
  /** The `mvn` executable, used once to fetch Kafka and Apicurio. @default 'mvn' from PATH */
  mavenBinary?: string;
  /**
   * The ClickHouse server executable (`clickhouse-server`, or `clickhouse` which is then
   * run as `clickhouse server`). @default found on PATH, /usr/bin, /usr/sbin
   */
  clickhouseBinary?: string;
  /**
   * When no ClickHouse server program is found and none is named: install Debian's
   * `clickhouse-server` with apt-get, if running as root where apt-get exists. @default true
   */
  installClickhouse?: boolean;
  /**
   * Extra JVM flags of each Kafka node. @default ['-Xms256m', '-Xmx1g'] for one node,
   * ['-Xms128m', '-Xmx384m'] each for several
   */
  kafkaJvmOptions?: string[];
  /**
   * JVM flags of the registry; the defaults trade peak speed for a faster start.
   * @default ['-Xms128m', '-Xmx512m', '-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xshare:auto']
   */
  registryJvmOptions?: string[];
  /** How long to wait for each service to become healthy. @default 180_000 */
  startTimeoutMs?: number;
  /** How long `down` waits after SIGTERM before SIGKILL. @default 30_000 */
  stopTimeoutMs?: number;
  /** Called with progress lines while starting or stopping. @default no-op */
  onProgress?: (progress: StackProgress) => void;
}

/** Every option with its default applied. */
export interface ResolvedStackOptions extends Required<
  Omit<StackOptions, 'kafkaBrokers' | 'schemaRegistryUrl' | 'clickhouseUrl' | 'clickhouseBinary'>
> {
  kafkaBrokers: string | undefined;
  schemaRegistryUrl: string | undefined;
  clickhouseUrl: string | undefined;
  clickhouseBinary: string | undefined;
}

export const DEFAULT_KAFKA_JVM_OPTIONS: readonly string[] = ['-Xms256m', '-Xmx1g'];
/** Each of several nodes: three JVMs share a small machine with the registry and the services. */
export const CLUSTER_KAFKA_JVM_OPTIONS: readonly string[] = ['-Xms128m', '-Xmx384m'];
/** Most Kafka nodes of a local stack (each a JVM on this machine). */
export const MAX_BROKER_COUNT = 5;

/** The flavour of a stack, its folder below the home: '' (plain, one broker), `secure`, `brokers-3`, `secure-brokers-3`. */
export function flavourOf(o: Pick<StackOptions, 'secure' | 'brokerCount'>): string {
  const n = o.brokerCount ?? 1;
  return [o.secure ? 'secure' : '', n > 1 ? `brokers-${n}` : ''].filter(Boolean).join('-');
}

/** How far a flavour's default ports are from the plain stack's, so flavours run side by side. */
export function portOffset(o: Pick<StackOptions, 'secure' | 'brokerCount'>): number {
  return (o.secure ? 100 : 0) + ((o.brokerCount ?? 1) > 1 ? 200 : 0);
}
export const DEFAULT_REGISTRY_JVM_OPTIONS: readonly string[] = [
  '-Xms128m',
  '-Xmx512m',
  // C1 only and a serial GC: Quarkus starts ~2x faster on a 2-core machine.
  '-XX:TieredStopAtLevel=1',
  '-XX:+UseSerialGC',
  '-Xshare:auto',
];

/** Applies the defaults; `cwd` anchors a relative or missing home. */
export function resolveStackOptions(options: StackOptions = {}, cwd = process.cwd()): ResolvedStackOptions {
  const base = resolve(cwd, options.home ?? '.turnstream');
  const brokerCount = options.brokerCount ?? 1;
  if (!Number.isInteger(brokerCount) || brokerCount < 1 || brokerCount > MAX_BROKER_COUNT) {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `brokers: expected an integer from 1 to ${MAX_BROKER_COUNT}, not ${brokerCount}`, {
      param: '--brokers',
      retriable: false,
    });
  }
  const secure = options.secure ?? false;
  const flavour = flavourOf({ secure, brokerCount });
  const home = flavour ? join(base, 'stacks', flavour) : base;
  const off = portOffset({ secure, brokerCount });
  return {
    home,
    distDir: resolve(cwd, options.distDir ?? base),
    secure,
    brokerCount,
    security: options.security ?? {},
    host: options.host ?? '127.0.0.1',
    kafkaPort: options.kafkaPort ?? 9092 + off,
    kafkaControllerPort: options.kafkaControllerPort ?? 9093 + off,
    registryPort: options.registryPort ?? 8081 + off,
    registryStorage: options.registryStorage ?? 'kafkasql',
    clickhousePort: options.clickhousePort ?? 8123 + off,
    clickhouseTcpPort: options.clickhouseTcpPort ?? 9000 + off,
    kafkaBrokers: options.kafkaBrokers || undefined,
    schemaRegistryUrl: options.schemaRegistryUrl || undefined,
    clickhouseUrl: options.clickhouseUrl || undefined,
    javaBinary: options.javaBinary ?? 'java',
    mavenBinary: options.mavenBinary ?? 'mvn',
    clickhouseBinary: options.clickhouseBinary,
    installClickhouse: options.installClickhouse ?? true,
    kafkaJvmOptions: options.kafkaJvmOptions ?? [...(brokerCount > 1 ? CLUSTER_KAFKA_JVM_OPTIONS : DEFAULT_KAFKA_JVM_OPTIONS)],
    registryJvmOptions: options.registryJvmOptions ?? [...DEFAULT_REGISTRY_JVM_OPTIONS],
    startTimeoutMs: options.startTimeoutMs ?? 180_000,
    stopTimeoutMs: options.stopTimeoutMs ?? 30_000,
    onProgress: options.onProgress ?? (() => {}),
  };
}

/** The endpoints clients use, local or given. */
export interface StackEndpoints {
  /** Kafka bootstrap servers, comma separated. */
  brokers: string;
  /** Confluent-compatible registry base URL (Apicurio's `/apis/ccompat/v7`). */
  registryUrl: string;
  /** ClickHouse HTTP URL. */
  clickhouseUrl: string;
}

/** Client port and controller port of each Kafka node of the local stack, node 1 first. */
export function kafkaNodePorts(o: Pick<ResolvedStackOptions, 'brokerCount' | 'kafkaPort' | 'kafkaControllerPort'>): Array<{
  nodeId: number;
  port: number;
  controllerPort: number;
}> {
  return Array.from({ length: o.brokerCount }, (_, i) => ({
    nodeId: i + 1,
    port: o.kafkaPort + 2 * i,
    controllerPort: o.kafkaControllerPort + 2 * i,
  }));
}

export function endpointsOf(o: ResolvedStackOptions): StackEndpoints {
  const scheme = o.secure ? 'https' : 'http';
  return {
    brokers:
      o.kafkaBrokers ??
      kafkaNodePorts(o)
        .map((n) => `${o.host}:${n.port}`)
        .join(','),
    registryUrl: stripSlash(o.schemaRegistryUrl ?? `${scheme}://${o.host}:${o.registryPort}/apis/ccompat/v7`),
    clickhouseUrl: stripSlash(o.clickhouseUrl ?? `${scheme}://${o.host}:${o.clickhousePort}`),
  };
}

const stripSlash = (url: string): string => url.replace(/\/+$/, '');
