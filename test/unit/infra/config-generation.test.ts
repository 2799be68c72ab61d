import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { clickhouseConfigXml, clickhousePaths, clickhouseUsersXml } from '../../../infra/clickhouse.ts';
import { kafkaLog4j2Properties, kafkaPaths, kafkaServerProperties, newClusterId } from '../../../infra/kafka.ts';
import { endpointsOf, resolveStackOptions } from '../../../infra/options.ts';
import { registryCommand, registryPaths, registrySystemProperties } from '../../../infra/registry.ts';
import { kafkaContainerEnvironment } from '../../support/containers.ts';
import { assertEntries } from '../../support/entries.ts';

const parseProperties = (text: string): Map<string, string> =>
  new Map(
    text
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.indexOf('=')).trim(), l.slice(l.indexOf('=') + 1).trim()] as [string, string]),
  );

test('defaults: home under cwd, the documented ports, endpoints built from them', () => {
  const o = resolveStackOptions({}, '/srv/app');
  assert.equal(o.home, '/srv/app/.turnstream');
  assert.equal(o.distDir, '/srv/app/.turnstream');
  assert.deepEqual(
    [o.host, o.kafkaPort, o.kafkaControllerPort, o.registryPort, o.clickhousePort, o.clickhouseTcpPort],
    ['127.0.0.1', 9092, 9093, 8081, 8123, 9000],
  );
  assert.equal(o.registryStorage, 'kafkasql');
  assert.deepEqual(endpointsOf(o), {
    brokers: '127.0.0.1:9092',
    registryUrl: 'http://127.0.0.1:8081/apis/ccompat/v7',
    clickhouseUrl: 'http://127.0.0.1:8123',
  });
});

test('given endpoints replace the local ones (trailing slashes dropped)', () => {
  const o = resolveStackOptions(
    { kafkaBrokers: 'k1:9092,k2:9092', schemaRegistryUrl: 'http://sr:8080/apis/ccompat/v7/', clickhouseUrl: 'http://ch:8123/' },
    '/x',
  );
  assert.deepEqual(endpointsOf(o), {
    brokers: 'k1:9092,k2:9092',
    registryUrl: 'http://sr:8080/apis/ccompat/v7',
    clickhouseUrl: 'http://ch:8123',
  });
});

test('Kafka server.properties: one combined KRaft node with single-node replication settings', () => {
  const o = resolveStackOptions({ kafkaPort: 19092, kafkaControllerPort: 19093 }, '/w');
  const props = parseProperties(kafkaServerProperties(o, { nodeId: 1, dataDir: kafkaPaths(o).nodes[0].dataDir }));
  assertEntries(props, {
    'process.roles': 'broker,controller',
    'node.id': '1',
    'controller.quorum.voters': '1@127.0.0.1:19093',
    listeners: 'PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093',
    'advertised.listeners': 'PLAINTEXT://127.0.0.1:19092',
    'log.dirs': '/w/.turnstream/kafka/data',
  });
  for (const key of ['offsets.topic.replication.factor', 'transaction.state.log.replication.factor', 'transaction.state.log.min.isr']) {
    assert.equal(props.get(key), '1', key);
  }
  assertEntries(props, {
    'group.initial.rebalance.delay.ms': '0',
    'broker.session.timeout.ms': '30000',
    'auto.create.topics.enable': 'false',
  });
});

test('the Docker descriptions of the broker (compose file, test containers) carry its settings', () => {
  const o = resolveStackOptions({}, '/w');
  const props = parseProperties(kafkaServerProperties(o, { nodeId: 1, dataDir: kafkaPaths(o).nodes[0].dataDir }));
  // Addresses and paths differ inside a container; every other setting must be the same.
  const where = new Set([
    'listeners',
    'advertised.listeners',
    'controller.quorum.voters',
    'inter.broker.listener.name',
    'listener.security.protocol.map',
    'log.dirs',
  ]);
  const envName = (key: string) => `KAFKA_${key.toUpperCase().replaceAll('.', '_')}`;
  const composeText = readFileSync(new URL('../../../infra/docker-compose.yml', import.meta.url), 'utf8');
  const compose = new Map([...composeText.matchAll(/^\s+(KAFKA_[A-Z_]+): '?([^'\n]*?)'?\s*$/gm)].map((m) => [m[1], m[2]]));
  const container = kafkaContainerEnvironment();
  for (const [key, value] of props) {
    if (where.has(key)) continue;
    assert.equal(container[envName(key)], value, `test container: ${key}`);
    assert.equal(compose.get(envName(key)), value, `docker-compose.yml: ${key}`);
  }
  // Its log goes into the folder its data volume mounts (the image's own default is under /tmp).
  assert.equal(compose.get('KAFKA_LOG_DIRS'), /'kafka-data:([^']+)'/.exec(composeText)?.[1]);
});

test('Kafka logs go to a rolling file under the home, not the console', () => {
  const text = kafkaLog4j2Properties('/w/.turnstream/logs/kafka');
  assert.match(text, /appender\.file\.fileName = \/w\/\.turnstream\/logs\/kafka\/server\.log/);
  assert.match(text, /rootLogger\.appenderRef\.file\.ref = file/);
  assert.doesNotMatch(text, /Console/);
});

test('cluster ids are 16 random bytes in base64url, never starting with a dash', () => {
  const ids = new Set(Array.from({ length: 200 }, newClusterId));
  assert.equal(ids.size, 200);
  for (const id of ids) {
    assert.match(id, /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    assert.equal(Buffer.from(id, 'base64url').length, 16);
  }
});

test('ClickHouse config: ports, loopback, every path under the home, no interserver port', () => {
  const o = resolveStackOptions({ clickhousePort: 18123, clickhouseTcpPort: 19000 }, '/w');
  const xml = clickhouseConfigXml(o, clickhousePaths(o));
  assert.match(xml, /<http_port>18123<\/http_port>/);
  assert.match(xml, /<tcp_port>19000<\/tcp_port>/);
  assert.match(xml, /<listen_host>127\.0\.0\.1<\/listen_host>/);
  assert.match(xml, /<path>\/w\/\.turnstream\/clickhouse\/data\/<\/path>/);
  assert.match(xml, /<users_config>\/w\/\.turnstream\/clickhouse\/users\.xml<\/users_config>/);
  assert.doesNotMatch(xml, /interserver_http_port|https_port|tcp_port_secure/);
  const paths = [...xml.matchAll(/<(?:log|errorlog|path|tmp_path|user_files_path|format_schema_path|users_config)>([^<]+)</g)].map(
    (m) => m[1],
  );
  assert.equal(paths.length, 7);
  for (const p of paths) assert.ok(p.startsWith('/w/.turnstream/'), p);
  assert.match(clickhouseUsersXml(), /<ip>127\.0\.0\.0\/8<\/ip>/);
});

test('ClickHouse config escapes XML in paths', () => {
  const o = resolveStackOptions({ home: '/tmp/a&b<c' }, '/');
  assert.match(clickhouseConfigXml(o, clickhousePaths(o)), /<path>\/tmp\/a&amp;b&lt;c\/clickhouse\/data\/<\/path>/);
});

test('registry kafkasql mode keeps schemas in the given Kafka; mem mode uses in-memory H2', () => {
  const o = resolveStackOptions({ registryPort: 18081 }, '/w');
  const kafkasql = registrySystemProperties(o, '127.0.0.1:19092', '/w/.turnstream/registry');
  assert.equal(kafkasql['apicurio.storage.kind'], 'kafkasql');
  assert.equal(kafkasql['apicurio.kafkasql.bootstrap.servers'], '127.0.0.1:19092');
  assert.equal(kafkasql['quarkus.http.port'], '18081');
  assert.equal(kafkasql['quarkus.http.host'], '127.0.0.1');
  const mem = registrySystemProperties({ ...o, registryStorage: 'mem' }, '127.0.0.1:19092', '/w/.turnstream/registry');
  assert.equal(mem['apicurio.storage.kind'], 'sql');
  assert.equal(mem['apicurio.storage.sql.kind'], 'h2');
  assert.equal(mem['apicurio.kafkasql.bootstrap.servers'], undefined);
});

test('registry command: JVM flags first, then -D properties, then -jar of the runner', () => {
  const o = resolveStackOptions({}, '/w');
  const { command, args } = registryCommand(o, registryPaths(o), '127.0.0.1:9092');
  assert.equal(command, 'java');
  assert.deepEqual(args.slice(0, o.registryJvmOptions.length), o.registryJvmOptions);
  assert.ok(args.includes('-XX:TieredStopAtLevel=1'));
  assert.ok(args.includes('-Dapicurio.storage.snapshot.location=/w/.turnstream/registry/snapshots'));
  assert.deepEqual(args.slice(-2), ['-jar', '/w/.turnstream/apicurio/3.0.9/apicurio-registry-app-3.0.9-runner.jar']);
});
