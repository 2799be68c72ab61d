/**
 * What `infra up --secure` and `--brokers n` write, without starting anything: their homes and
 * ports beside the plain stack, each node's server.properties, the secured registry's and
 * ClickHouse's settings, the SCRAM credentials given to the storage format, and the settings
 * `infra up` prints. No password is on a command line or in a printed setting.
 */
import assert from 'node:assert/strict';
import { pbkdf2Sync } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { clickhouseConfigXml, clickhousePaths, clickhouseUsersXml } from '../../../infra/clickhouse.ts';
import { kafkaPaths, kafkaServerProperties } from '../../../infra/kafka.ts';
import { endpointsOf, resolveStackOptions } from '../../../infra/options.ts';
import { portClaims } from '../../../infra/preflight.ts';
import { registryCommand, registryPaths, registrySecrets } from '../../../infra/registry.ts';
import { scramCredential, securePaths, sha256Hex, subjectAltNames } from '../../../infra/secure.ts';
import { clientSettings } from '../../../infra/stack.ts';
import { assertEntries } from '../../support/entries.ts';

const props = (text: string): Map<string, string> =>
  new Map(
    text
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as [string, string]),
  );

/** A secured stack's home with its passwords written (as prepareSecurity leaves them). */
function secureHome(options: { brokerCount?: number } = {}) {
  const base = mkdtempSync(join(tmpdir(), 'infra-secure-'));
  const o = resolveStackOptions({ home: base, secure: true, ...options }, '/');
  const s = securePaths(o);
  mkdirSync(s.dir, { recursive: true });
  const passwords = { kafka: 'kafka-pw-1', broker: 'broker-pw-2', registry: 'registry-pw-3', clickhouse: 'clickhouse-pw-4' };
  writeFileSync(s.kafkaPassword, `${passwords.kafka}\n`);
  writeFileSync(s.brokerPassword, `${passwords.broker}\n`);
  writeFileSync(s.registryPassword, `${passwords.registry}\n`);
  writeFileSync(s.clickhousePassword, `${passwords.clickhouse}\n`);
  return { base, o, s, passwords };
}

test('a secured stack and one of several brokers live in homes of their own, on ports beside the plain one', () => {
  const plain = resolveStackOptions({}, '/srv');
  const secure = resolveStackOptions({ secure: true }, '/srv');
  const three = resolveStackOptions({ brokerCount: 3 }, '/srv');
  const both = resolveStackOptions({ secure: true, brokerCount: 3 }, '/srv');
  assert.deepEqual(
    [plain, secure, three, both].map((o) => [o.home, o.distDir, o.kafkaPort, o.kafkaControllerPort, o.registryPort, o.clickhousePort]),
    [
      ['/srv/.turnstream', '/srv/.turnstream', 9092, 9093, 8081, 8123],
      ['/srv/.turnstream/stacks/secure', '/srv/.turnstream', 9192, 9193, 8181, 8223],
      ['/srv/.turnstream/stacks/brokers-3', '/srv/.turnstream', 9292, 9293, 8281, 8323],
      ['/srv/.turnstream/stacks/secure-brokers-3', '/srv/.turnstream', 9392, 9393, 8381, 8423],
    ],
  );
  assert.deepEqual(endpointsOf(secure), {
    brokers: '127.0.0.1:9192',
    registryUrl: 'https://127.0.0.1:8181/apis/ccompat/v7',
    clickhouseUrl: 'https://127.0.0.1:8223',
  });
  assert.equal(endpointsOf(three).brokers, '127.0.0.1:9292,127.0.0.1:9294,127.0.0.1:9296');
  assert.deepEqual(three.kafkaJvmOptions, ['-Xms128m', '-Xmx384m']);
  assert.deepEqual(plain.kafkaJvmOptions, ['-Xms256m', '-Xmx1g']);
  for (const n of [0, 6, 1.5]) assert.throws(() => resolveStackOptions({ brokerCount: n }), /brokers: expected an integer from 1 to 5/);
  // One node keeps the layout every home had; several have one folder, log and pid file each.
  assert.deepEqual(
    kafkaPaths(plain).nodes.map((n) => [n.serverProperties, n.pidFile]),
    [['/srv/.turnstream/kafka/server.properties', '/srv/.turnstream/pids/kafka.pid']],
  );
  assert.deepEqual(
    kafkaPaths(three).nodes.map((n) => [n.serverProperties, n.logDir, n.pidFile]),
    [1, 2, 3].map((i) => [
      `/srv/.turnstream/stacks/brokers-3/kafka/node-${i}/server.properties`,
      `/srv/.turnstream/stacks/brokers-3/logs/kafka-${i}`,
      `/srv/.turnstream/stacks/brokers-3/pids/kafka-${i}.pid`,
    ]),
  );
});

test('three nodes: one static quorum of all, each its own ports, three copies with two in sync', () => {
  const o = resolveStackOptions({ brokerCount: 3, kafkaPort: 30000, kafkaControllerPort: 30001 }, '/w');
  const node2 = props(kafkaServerProperties(o, { nodeId: 2, dataDir: '/d2' }));
  assertEntries(node2, {
    'node.id': '2',
    'controller.quorum.voters': '1@127.0.0.1:30001,2@127.0.0.1:30003,3@127.0.0.1:30005',
    listeners: 'PLAINTEXT://127.0.0.1:30002,CONTROLLER://127.0.0.1:30003',
    'advertised.listeners': 'PLAINTEXT://127.0.0.1:30002',
  });
  for (const key of ['default.replication.factor', 'offsets.topic.replication.factor', 'transaction.state.log.replication.factor']) {
    assert.equal(node2.get(key), '3', key);
  }
  for (const key of ['min.insync.replicas', 'transaction.state.log.min.isr']) assert.equal(node2.get(key), '2', key);
  assert.equal(node2.get('broker.session.timeout.ms'), '10000');
  const two = props(kafkaServerProperties(resolveStackOptions({ brokerCount: 2 }, '/w'), { nodeId: 1, dataDir: '/d' }));
  assert.deepEqual([two.get('default.replication.factor'), two.get('min.insync.replicas')], ['2', '2']);
  // Only the nodes that are not running claim their ports.
  assert.deepEqual(
    portClaims(o, (s) => (s === 'kafka' ? [1] : [])).map((c) => [c.service, c.port]),
    [
      ['Kafka node 2', 30002],
      ['Kafka controller node 2', 30003],
    ],
  );
});

test('a secured node: SASL_SSL for clients and brokers, mutual TLS between controllers, the PEM files of its home', () => {
  const { o, s, passwords } = secureHome();
  const p = props(
    kafkaServerProperties(o, {
      nodeId: 1,
      dataDir: '/d',
      secure: { paths: s, brokerPassword: passwords.broker, clientPassword: passwords.kafka },
    }),
  );
  assertEntries(p, {
    listeners: 'SASL_SSL://127.0.0.1:9192,CONTROLLER://127.0.0.1:9193',
    'inter.broker.listener.name': 'SASL_SSL',
    'listener.security.protocol.map': 'SASL_SSL:SASL_SSL,CONTROLLER:SSL',
    'listener.name.controller.ssl.client.auth': 'required',
    'sasl.enabled.mechanisms': 'SCRAM-SHA-512,SCRAM-SHA-256,PLAIN',
    'ssl.keystore.location': s.keystore,
    'ssl.truststore.location': s.caCert,
  });
  assert.match(p.get('listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config') ?? '', /username="broker" password="broker-pw-2";$/);
  assert.match(p.get('listener.name.sasl_ssl.plain.sasl.jaas.config') ?? '', /user_turnstream="kafka-pw-1"/);
});

test("SCRAM credentials for the storage format are salted: Kafka's SaltedPassword, not the password", () => {
  const arg = scramCredential('SCRAM-SHA-512', 'turnstream', 'the-password');
  const m = /^SCRAM-SHA-512=\[name=turnstream,salt="([^"]+)",saltedpassword="([^"]+)",iterations=4096\]$/.exec(arg);
  assert.ok(m, arg);
  assert.ok(!arg.includes('the-password'));
  const salted = pbkdf2Sync('the-password', Buffer.from(m[1], 'base64'), 4096, 64, 'sha512');
  assert.equal(m[2], salted.toString('base64'));
  assert.match(
    scramCredential('SCRAM-SHA-256', 'u', 'p'),
    /^SCRAM-SHA-256=\[name=u,salt="[^"]+",saltedpassword="[^"]{44}",iterations=4096\]$/,
  );
  assert.equal(subjectAltNames('127.0.0.1'), 'IP:127.0.0.1,DNS:localhost');
  assert.equal(subjectAltNames('10.0.0.5'), 'IP:127.0.0.1,DNS:localhost,IP:10.0.0.5');
  assert.equal(subjectAltNames('kafka.local'), 'IP:127.0.0.1,DNS:localhost,DNS:kafka.local');
});

test('a secured registry: https only, basic auth on all but health, its Kafka login over SASL_SSL; the passwords in its secrets file, not its command line', () => {
  const { o, s, passwords } = secureHome();
  const paths = registryPaths(o);
  const { args } = registryCommand(o, paths, '127.0.0.1:9192');
  const d = new Map(args.filter((a) => a.startsWith('-D')).map((a) => [a.slice(2, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
  assertEntries(d, {
    'quarkus.http.ssl-port': '8181',
    'quarkus.http.insecure-requests': 'disabled',
    'quarkus.http.ssl.certificate.files': s.cert,
    'quarkus.http.auth.basic': 'true',
    'quarkus.http.auth.permission.login.paths': '/*',
    'quarkus.http.auth.permission.health.policy': 'permit',
    'apicurio.kafka.common.security.protocol': 'SASL_SSL',
    'apicurio.kafka.common.ssl.truststore.location': s.caCert,
    'quarkus.config.locations': paths.secretsFile,
  });
  for (const pw of Object.values(passwords)) assert.ok(!args.join(' ').includes(pw), 'no password on the command line');
  const secrets = registrySecrets(o);
  assert.match(secrets, /^quarkus\.security\.users\.embedded\.users\.turnstream=registry-pw-3$/m);
  assert.match(secrets, /username="turnstream" password="kafka-pw-1";$/m);
});

test('a secured ClickHouse: https only with the stack certificate, one user whose password is stored as SHA-256', () => {
  const { o, s, passwords } = secureHome();
  const xml = clickhouseConfigXml(o, clickhousePaths(o));
  assert.match(xml, /<https_port>8223<\/https_port>/);
  assert.match(xml, new RegExp(`<certificateFile>${s.cert}</certificateFile>`));
  assert.match(xml, new RegExp(`<privateKeyFile>${s.key}</privateKeyFile>`));
  assert.doesNotMatch(xml, /<http_port>|<tcp_port>/);
  const users = clickhouseUsersXml({ name: 'turnstream', password: passwords.clickhouse });
  assert.match(users, new RegExp(`<turnstream>\\s*<password_sha256_hex>${sha256Hex(passwords.clickhouse)}</password_sha256_hex>`));
  assert.doesNotMatch(/<users>[\s\S]*<\/users>/.exec(users)?.[0] ?? '', /<default>/, 'no default user');
  assert.ok(!users.includes(passwords.clickhouse));
});

test('infra up prints what a service needs: the logins, and every password as the file that holds it', () => {
  const { base, s, passwords } = secureHome();
  const options = { home: base, secure: true };
  const settings = clientSettings(options, endpointsOf(resolveStackOptions(options)));
  assert.deepEqual(settings, {
    KAFKA_BROKERS: '127.0.0.1:9192',
    KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: 'turnstream',
    KAFKA_SASL_PASSWORD_FILE: s.kafkaPassword,
    KAFKA_TLS_CA_FILE: s.caCert,
    SCHEMA_REGISTRY_URL: 'https://127.0.0.1:8181/apis/ccompat/v7',
    SCHEMA_REGISTRY_USERNAME: 'turnstream',
    SCHEMA_REGISTRY_PASSWORD_FILE: s.registryPassword,
    SCHEMA_REGISTRY_CA_FILE: s.caCert,
    CLICKHOUSE_URL: 'https://127.0.0.1:8223',
    CLICKHOUSE_USER: 'turnstream',
    CLICKHOUSE_PASSWORD_FILE: s.clickhousePassword,
    CLICKHOUSE_CA_FILE: s.caCert,
  });
  for (const pw of Object.values(passwords)) assert.ok(!JSON.stringify(settings).includes(pw));
  assert.deepEqual(clientSettings({ home: base }, endpointsOf(resolveStackOptions({ home: base }))), {
    KAFKA_BROKERS: '127.0.0.1:9092',
    SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081/apis/ccompat/v7',
    CLICKHOUSE_URL: 'http://127.0.0.1:8123',
  });
});
