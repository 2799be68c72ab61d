/**
 * Apache Kafka 4.x in KRaft mode: one process that is both broker and controller, its jars
 * copied from Maven Central by infra/kafka/pom.xml, its data and logs under the home.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from '../streams/index.ts';
import type { ResolvedStackOptions } from './options.ts';
import { runCommand } from './run-command.ts';

export const KAFKA_VERSION = '4.1.1';

/** The pom that lists Kafka and its runtime dependencies. */
export const KAFKA_POM = fileURLToPath(new URL('./kafka/pom.xml', import.meta.url));

/** Where the Kafka pieces live. */
export interface KafkaPaths {
  libs: string;
  configDir: string;
  serverProperties: string;
  log4jProperties: string;
  dataDir: string;
  clusterIdFile: string;
  logDir: string;
  stdoutLog: string;
  pidFile: string;
}

export function kafkaPaths(o: Pick<ResolvedStackOptions, 'home' | 'distDir'>): KafkaPaths {
  const configDir = join(o.home, 'kafka');
  return {
    libs: join(o.distDir, 'kafka', 'libs'),
    configDir,
    serverProperties: join(configDir, 'server.properties'),
    log4jProperties: join(configDir, 'log4j2.properties'),
    dataDir: join(configDir, 'data'),
    clusterIdFile: join(configDir, 'cluster-id'),
    logDir: join(o.home, 'logs', 'kafka'),
    stdoutLog: join(o.home, 'logs', 'kafka.out'),
    pidFile: join(o.home, 'pids', 'kafka.pid'),
  };
}

/**
 * server.properties of a single combined broker+controller. The quorum is static
 * (`controller.quorum.voters`), so the ports can change between starts without
 * reformatting the storage.
 */
export function kafkaServerProperties(
  o: Pick<ResolvedStackOptions, 'host' | 'kafkaPort' | 'kafkaControllerPort'>,
  dataDir: string,
): string {
  const props: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@${o.host}:${o.kafkaControllerPort}`,
    listeners: `PLAINTEXT://${o.host}:${o.kafkaPort},CONTROLLER://${o.host}:${o.kafkaControllerPort}`,
    'advertised.listeners': `PLAINTEXT://${o.host}:${o.kafkaPort}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': dataDir,
    'num.partitions': 1,
    'default.replication.factor': 1,
    // One node: internal topics with the default factor 3 never come up, and consumer
    // groups and transactions hang.
    'offsets.topic.replication.factor': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    'group.initial.rebalance.delay.ms': 0,
    // The only broker fencing itself takes every partition offline. On a busy 2-core machine the
    // controller stalled 16.5 s (the default 9 s fenced the broker; consumers crashed and rejoined).
    'broker.session.timeout.ms': 30_000,
    // Topics are created explicitly (streams/topics); a typo must not create one.
    'auto.create.topics.enable': 'false',
    'log.retention.hours': 168,
  };
  return (
    Object.entries(props)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n') + '\n'
  );
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

/** Writes the configs; formats the storage the first time (returns true then). */
export async function prepareKafka(o: ResolvedStackOptions, paths: KafkaPaths): Promise<boolean> {
  mkdirSync(paths.configDir, { recursive: true });
  mkdirSync(paths.logDir, { recursive: true });
  writeFileSync(paths.serverProperties, kafkaServerProperties(o, paths.dataDir));
  writeFileSync(paths.log4jProperties, kafkaLog4j2Properties(paths.logDir));
  if (existsSync(join(paths.dataDir, 'meta.properties'))) return false;
  if (!existsSync(paths.clusterIdFile)) writeFileSync(paths.clusterIdFile, `${newClusterId()}\n`);
  const clusterId = readFileSync(paths.clusterIdFile, 'utf8').trim();
  await runCommand(
    o.javaBinary,
    [
      `-Dlog4j2.configurationFile=${paths.log4jProperties}`,
      '-cp',
      `${paths.libs}/*`,
      'kafka.tools.StorageTool',
      'format',
      '-t',
      clusterId,
      '-c',
      paths.serverProperties,
    ],
    { what: 'formatting Kafka storage', timeoutMs: 120_000 },
  );
  return true;
}

/** The java command line of the broker. */
export function kafkaCommand(o: ResolvedStackOptions, paths: KafkaPaths): { command: string; args: string[] } {
  return {
    command: o.javaBinary,
    args: [
      ...o.kafkaJvmOptions,
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${paths.log4jProperties}`,
      `-Dkafka.logs.dir=${paths.logDir}`,
      '-cp',
      `${paths.libs}/*`,
      'kafka.Kafka',
      paths.serverProperties,
    ],
  };
}

/** True when a Kafka admin client connects to `brokers` and sees at least one broker. */
export async function kafkaHealthy(brokers: string, timeoutMs = 3_000): Promise<boolean> {
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
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}
