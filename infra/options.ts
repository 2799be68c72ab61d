import { resolve } from 'node:path';

/** Where the Schema Registry keeps its schemas. */
export type RegistryStorage = 'kafkasql' | 'mem';

/** A line of progress while the stack starts or stops. */
export interface StackProgress {
  service: 'kafka' | 'registry' | 'clickhouse' | 'stack';
  message: string;
  /** Milliseconds since the operation began. */
  elapsedMs: number;
}

/** Options of the local stack (Kafka, Schema Registry, ClickHouse). */
export interface StackOptions {
  /**
   * Folder of the stack's data, logs, pid files and generated configs.
   * @default `<cwd>/.turnstream`
   */
  home?: string;
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
  /** Kafka client (PLAINTEXT) port. @default 9092 */
  kafkaPort?: number;
  /** Kafka KRaft controller port. @default 9093 */
  kafkaControllerPort?: number;
  /** Schema Registry HTTP port. @default 8081 */
  registryPort?: number;
  /**
   * `kafkasql` keeps the schemas in Kafka (topic `kafkasql-journal`), so they survive a
   * restart; `mem` keeps them in an in-memory H2 database, for throw-away runs.
   * @default 'kafkasql'
   */
  registryStorage?: RegistryStorage;
  /** ClickHouse HTTP port. @default 8123 */
  clickhousePort?: number;
  /** ClickHouse native (TCP) port. @default 9000 */
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
  /** Extra JVM flags of the Kafka broker. @default ['-Xms256m', '-Xmx1g'] */
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
  const home = resolve(cwd, options.home ?? '.turnstream');
  return {
    home,
    distDir: resolve(cwd, options.distDir ?? home),
    host: options.host ?? '127.0.0.1',
    kafkaPort: options.kafkaPort ?? 9092,
    kafkaControllerPort: options.kafkaControllerPort ?? 9093,
    registryPort: options.registryPort ?? 8081,
    registryStorage: options.registryStorage ?? 'kafkasql',
    clickhousePort: options.clickhousePort ?? 8123,
    clickhouseTcpPort: options.clickhouseTcpPort ?? 9000,
    kafkaBrokers: options.kafkaBrokers || undefined,
    schemaRegistryUrl: options.schemaRegistryUrl || undefined,
    clickhouseUrl: options.clickhouseUrl || undefined,
    javaBinary: options.javaBinary ?? 'java',
    mavenBinary: options.mavenBinary ?? 'mvn',
    clickhouseBinary: options.clickhouseBinary,
    installClickhouse: options.installClickhouse ?? true,
    kafkaJvmOptions: options.kafkaJvmOptions ?? [...DEFAULT_KAFKA_JVM_OPTIONS],
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

export function endpointsOf(o: ResolvedStackOptions): StackEndpoints {
  return {
    brokers: o.kafkaBrokers ?? `${o.host}:${o.kafkaPort}`,
    registryUrl: stripSlash(o.schemaRegistryUrl ?? `http://${o.host}:${o.registryPort}/apis/ccompat/v7`),
    clickhouseUrl: stripSlash(o.clickhouseUrl ?? `http://${o.host}:${o.clickhousePort}`),
  };
}

const stripSlash = (url: string): string => url.replace(/\/+$/, '');
