/**
 * Apache Kafka 4.x in KRaft mode: one process per node, each both broker and controller (a
 * quorum of all nodes), its jars copied from Maven Central by infra/kafka/pom.xml, its data and
 * logs under the home.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, kafkaSecurityConfig, logLevel, type KafkaSecurity } from '../streams/index.ts';
import { kafkaNodePorts, type ResolvedStackOptions } from './options.ts';
import { runCommand } from './run-command.ts';
import { BROKER_USER, readPassword, SECURE_USER, scramCredential, securePaths, type SecurePaths } from './secure.ts';

export const KAFKA_VERSION = '4.1.1';

/** The pom that lists Kafka and its runtime dependencies. */
export const KAFKA_POM = fileURLToPath(new URL('./kafka/pom.xml', import.meta.url));

/** Where one Kafka node's pieces live. */
export interface KafkaNodePaths {
  nodeId: number;
  configDir: string;
  serverProperties: string;
  log4jProperties: string;
  dataDir: string;
  logDir: string;
  stdoutLog: string;
  pidFile: string;
}

/** Where the Kafka pieces live: the jars, the cluster id, and each node. */
export interface KafkaPaths {
  libs: string;
  clusterIdFile: string;
  nodes: KafkaNodePaths[];
}

/**
 * One node keeps the layout of every home so far (`kafka/`, `logs/kafka`, `pids/kafka.pid`);
 * of several, node n has `kafka/node-n/`, `logs/kafka-n`, `pids/kafka-n.pid`.
 */
export function kafkaPaths(o: Pick<ResolvedStackOptions, 'home' | 'distDir' | 'brokerCount'>): KafkaPaths {
  const kafkaDir = join(o.home, 'kafka');
  const node = (nodeId: number): KafkaNodePaths => {
    const one = o.brokerCount === 1;
    const configDir = one ? kafkaDir : join(kafkaDir, `node-${nodeId}`);
    const name = one ? 'kafka' : `kafka-${nodeId}`;
    return {
      nodeId,
      configDir,
      serverProperties: join(configDir, 'server.properties'),
      log4jProperties: join(configDir, 'log4j2.properties'),
      dataDir: join(configDir, 'data'),
      logDir: join(o.home, 'logs', name),
      stdoutLog: join(o.home, 'logs', `${name}.out`),
      pidFile: join(o.home, 'pids', `${name}.pid`),
    };
  };
  return {
    libs: join(o.distDir, 'kafka', 'libs'),
    clusterIdFile: join(kafkaDir, 'cluster-id'),
    nodes: Array.from({ length: o.brokerCount }, (_, i) => node(i + 1)),
  };
}

/** What a node's config needs beyond the options: its data folder, and the secured stack's files. */
export interface KafkaNodeContext {
  nodeId: number;
  dataDir: string;
  /** Set for a secured stack. */
  secure?: { paths: SecurePaths; brokerPassword: string; clientPassword: string };
}

const props = (entries: Record<string, string | number>): string =>
  Object.entries(entries)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n') + '\n';

/**
 * server.properties of one combined broker+controller node. The quorum is static
 * (`controller.quorum.voters`, every node), so the ports can change between starts without
 * reformatting the storage. Several nodes keep min(3, n) copies of the internal topics, 2 of them
 * in sync; a secured stack listens with SASL_SSL for clients and brokers, and with TLS that
 * requires the CA's certificate on both sides (mutual TLS) between the controllers.
 */
export function kafkaServerProperties(
  o: Pick<ResolvedStackOptions, 'host' | 'kafkaPort' | 'kafkaControllerPort' | 'brokerCount'>,
  node: KafkaNodeContext,
): string {
  const nodes = kafkaNodePorts(o);
  const me = nodes[node.nodeId - 1];
  const rf = Math.min(3, o.brokerCount);
  const isr = rf >= 2 ? 2 : 1;
  const client = node.secure ? 'SASL_SSL' : 'PLAINTEXT';
  const entries: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': node.nodeId,
    'controller.quorum.voters': nodes.map((n) => `${n.nodeId}@${o.host}:${n.controllerPort}`).join(','),
    listeners: `${client}://${o.host}:${me.port},CONTROLLER://${o.host}:${me.controllerPort}`,
    'advertised.listeners': `${client}://${o.host}:${me.port}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': client,
    'listener.security.protocol.map': node.secure ? 'SASL_SSL:SASL_SSL,CONTROLLER:SSL' : 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': node.dataDir,
    'num.partitions': 1,
    'default.replication.factor': rf,
    // Internal topics with as many copies as the cluster holds: at Kafka's default 3 on one node
    // they never come up, and consumer groups and transactions hang.
    'offsets.topic.replication.factor': rf,
    'transaction.state.log.replication.factor': rf,
    'transaction.state.log.min.isr': isr,
    'share.coordinator.state.topic.replication.factor': rf,
    'share.coordinator.state.topic.min.isr': isr,
    ...(o.brokerCount > 1 ? { 'min.insync.replicas': isr } : {}),
    'group.initial.rebalance.delay.ms': 0,
    // The only broker fencing itself takes every partition offline. On a busy 2-core machine the
    // controller stalled 16.5 s (the default 9 s fenced the broker; consumers crashed and rejoined).
    // Of several, a dead broker's partitions move to the others once it is fenced: soon.
    'broker.session.timeout.ms': o.brokerCount > 1 ? 10_000 : 30_000,
    // Topics are created explicitly (streams/topics); a typo must not create one.
    'auto.create.topics.enable': 'false',
    'log.retention.hours': 168,
    ...(node.secure ? secureKafkaProperties(node.secure) : {}),
  };
  return props(entries);
}

/** The TLS and SASL settings of a secured node (its file holds passwords: it is written owner-only). */
function secureKafkaProperties(s: NonNullable<KafkaNodeContext['secure']>): Record<string, string> {
  const jaas = (module: string, options: Record<string, string>): string =>
    `org.apache.kafka.common.security.${module} required${Object.entries(options)
      .map(([k, v]) => ` ${k}="${v}"`)
      .join('')};`;
  return {
    'sasl.enabled.mechanisms': 'SCRAM-SHA-512,SCRAM-SHA-256,PLAIN',
    'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-512',
    'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': jaas('scram.ScramLoginModule', {
      username: BROKER_USER,
      password: s.brokerPassword,
    }),
    'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config': jaas('scram.ScramLoginModule', {}),
    // PLAIN checks passwords against this list, not the SCRAM credentials.
    'listener.name.sasl_ssl.plain.sasl.jaas.config': jaas('plain.PlainLoginModule', {
      username: BROKER_USER,
      password: s.brokerPassword,
      [`user_${BROKER_USER}`]: s.brokerPassword,
      [`user_${SECURE_USER}`]: s.clientPassword,
    }),
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': s.paths.keystore,
    'ssl.truststore.type': 'PEM',
    'ssl.truststore.location': s.paths.caCert,
    'listener.name.controller.ssl.client.auth': 'required',
  };
}

/** Log4j 2 config: everything to `<logDir>/server.log`, rolled at 50 MB. */
export function kafkaLog4j2Properties(logDir: string): string {
  return [
    'status = warn',
    'appender.file.type = RollingFile',
    'appender.file.name = file',
    `appender.file.fileName = ${join(logDir, 'server.log')}`,
    `appender.file.filePattern = ${join(logDir, 'server.log.%i')}`,
    'appender.file.layout.type = PatternLayout',
    'appender.file.layout.pattern = [%d] %p %m (%c)%n',
    'appender.file.policies.type = Policies',
    'appender.file.policies.size.type = SizeBasedTriggeringPolicy',
    'appender.file.policies.size.size = 50MB',
    'appender.file.strategy.type = DefaultRolloverStrategy',
    'appender.file.strategy.max = 3',
    'rootLogger.level = info',
    'rootLogger.appenderRef.file.ref = file',
    'logger.request.name = kafka.request.logger',
    'logger.request.level = warn',
    '',
  ].join('\n');
}

/** A Kafka cluster id: 16 random bytes, base64url without padding, not starting with `-`. */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** Copies Kafka's jars into `libs` unless the same pom already did. */
export async function installKafka(o: ResolvedStackOptions, paths: KafkaPaths): Promise<boolean> {
  const pom = readFileSync(KAFKA_POM, 'utf8');
  const stamp = join(paths.libs, '.pom-sha256');
  const digest = createHash('sha256').update(pom).digest('hex');
  if (existsSync(join(paths.libs, `kafka_2.13-${KAFKA_VERSION}.jar`)) && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) {
    return false;
  }
  mkdirSync(paths.libs, { recursive: true });
  await runCommand(
    o.mavenBinary,
    [
      '-q',
      '-B',
      '-f',
      KAFKA_POM,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${paths.libs}`,
      '-DincludeScope=runtime',
      '-DoverWriteIfNewer=true',
    ],
    { what: 'downloading Kafka with Maven' },
  );
  writeFileSync(stamp, digest);
  return true;
}

/**
 * Writes every node's configs; formats the storage of a node that has none (returns true when it
 * formatted one). A secured stack's SCRAM users (the clients' and the brokers') are added at
 * format time, salted, the same on every node.
 */
export async function prepareKafka(o: ResolvedStackOptions, paths: KafkaPaths): Promise<boolean> {
  const secure = o.secure ? securePaths(o) : undefined;
  const passwords = secure && { brokerPassword: readPassword(secure.brokerPassword), clientPassword: readPassword(secure.kafkaPassword) };
  mkdirSync(dirname(paths.clusterIdFile), { recursive: true });
  if (!existsSync(paths.clusterIdFile)) writeFileSync(paths.clusterIdFile, `${newClusterId()}\n`);
  const clusterId = readFileSync(paths.clusterIdFile, 'utf8').trim();
  const scram =
    passwords &&
    (['SCRAM-SHA-512', 'SCRAM-SHA-256'] as const).flatMap((m) => [
      '--add-scram',
      scramCredential(m, SECURE_USER, passwords.clientPassword),
      '--add-scram',
      scramCredential(m, BROKER_USER, passwords.brokerPassword),
    ]);
  let formatted = false;
  for (const node of paths.nodes) {
    mkdirSync(node.configDir, { recursive: true });
    mkdirSync(node.logDir, { recursive: true });
    const context: KafkaNodeContext = {
      nodeId: node.nodeId,
      dataDir: node.dataDir,
      secure: secure && passwords && { paths: secure, ...passwords },
    };
    // Owner-only: a secured node's file holds the brokers' and the PLAIN users' passwords.
    writeFileSync(node.serverProperties, kafkaServerProperties(o, context), { mode: 0o600 });
    chmodSync(node.serverProperties, 0o600);
    writeFileSync(node.log4jProperties, kafkaLog4j2Properties(node.logDir));
    if (existsSync(join(node.dataDir, 'meta.properties'))) continue;
    await runCommand(
      o.javaBinary,
      [
        `-Dlog4j2.configurationFile=${node.log4jProperties}`,
        '-cp',
        `${paths.libs}/*`,
        'kafka.tools.StorageTool',
        'format',
        '-t',
        clusterId,
        '-c',
        node.serverProperties,
        ...(scram ?? []),
      ],
      { what: `formatting Kafka storage (node ${node.nodeId})`, timeoutMs: 120_000, secretArgs: scram !== undefined },
    );
    formatted = true;
  }
  return formatted;
}

/** The java command line of one node. */
export function kafkaCommand(o: ResolvedStackOptions, libs: string, node: KafkaNodePaths): { command: string; args: string[] } {
  return {
    command: o.javaBinary,
    args: [
      ...o.kafkaJvmOptions,
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${node.log4jProperties}`,
      `-Dkafka.logs.dir=${node.logDir}`,
      '-cp',
      `${libs}/*`,
      'kafka.Kafka',
      node.serverProperties,
    ],
  };
}

/** How a health check reaches Kafka. */
export interface KafkaHealthOptions {
  /** @default 3000 */
  timeoutMs?: number;
  /** TLS and SASL. @default plaintext */
  security?: KafkaSecurity;
  /** Brokers the cluster must show to count as up (a local stack of several waits for all). @default 1 */
  brokers?: number;
}

/** True when a Kafka admin client connects to `brokers` and sees at least `o.brokers` brokers. */
export async function kafkaHealthy(brokers: string, o: KafkaHealthOptions = {}): Promise<boolean> {
  const timeoutMs = o.timeoutMs ?? 3_000;
  const kafka = new Kafka({
    clientId: 'turnstream-infra',
    brokers: brokers
      .split(',')
      .map((b) => b.trim())
      .filter(Boolean),
    connectionTimeout: Math.min(timeoutMs, 1_000),
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
    ...kafkaSecurityConfig(o.security),
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length >= (o.brokers ?? 1);
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}
