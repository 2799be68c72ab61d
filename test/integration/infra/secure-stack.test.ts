/**
 * The secured local stack (`infra up --secure`), for real, in a throw-away home on free ports:
 * Kafka takes only SASL logins over TLS, the registry only https with basic auth, ClickHouse only
 * https with a password. The services run on it as `turnstream` commands configured by the
 * settings `infra up` prints: a turn goes through the gateway (a Kafka producer, the registry),
 * the session assembler (a consumer and transactions) and the sink (ClickHouse) with known
 * passwords, and none of them shows up in any log. A wrong password or an untrusted certificate
 * ends a command with one line naming the setting, and exit code 2. Stopped at the end, by pid.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { AnalyticsStore } from '../../../warehouse/index.ts';
import { httpGet, readCaFile, readSecretFile } from '../../../core/index.ts';
import { clientSettings, kafkaHealthy, makeCa, stackDown, stackUp, type StackOptions, type StackUpResult } from '../../../infra/index.ts';
import { createKafka, parseBrokers, SASL_MECHANISMS } from '../../../streams/index.ts';
import { distinctFreePorts, freePortBlock } from '../../support/port-block.ts';
import { REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';

const home = mkdtempSync(join(tmpdir(), 'turnstream-secure-'));
let options: StackOptions;
let up: StackUpResult;
/** What `infra up --secure` prints: the endpoints, the logins, every password as its file. */
let settings: Record<string, string>;
const stackHome = join(home, 'stacks', 'secure');
const credentials = join(stackHome, 'credentials');

before(async () => {
  const kafkaPort = await freePortBlock(2);
  const [registryPort, clickhousePort] = await distinctFreePorts(2, [kafkaPort, kafkaPort + 1]);
  options = {
    home,
    distDir: join(REPO_ROOT, '.turnstream'),
    secure: true,
    kafkaPort,
    kafkaControllerPort: kafkaPort + 1,
    registryPort,
    clickhousePort,
    onProgress: (p) => process.stderr.write(`# ${p.service}: ${p.message}\n`),
  };
  up = await stackUp(options);
  process.stderr.write(`# the secured stack is up in ${(up.ms / 1000).toFixed(1)} s\n`);
  settings = clientSettings(options, up);
});

after(async () => {
  if (options) await stackDown(options);
  rmSync(home, { recursive: true, force: true });
});

const password = (name: string): string => readFileSync(join(credentials, `${name}-password`), 'utf8').trim();

test('only TLS and logins get in, and the credentials on disk are the owner’s alone', async () => {
  assert.equal(settings.KAFKA_SECURITY_PROTOCOL, 'sasl_ssl');
  assert.match(up.registryUrl, /^https:\/\//);
  assert.match(up.clickhouseUrl, /^https:\/\//);
  for (const file of [
    'ca.key',
    'server.key',
    'server-keystore.pem',
    'kafka-password',
    'broker-password',
    'registry-password',
    'clickhouse-password',
  ]) {
    assert.equal(statSync(join(credentials, file)).mode & 0o777, 0o600, file);
  }
  for (const file of ['kafka/server.properties', 'registry/secrets.properties', 'clickhouse/users.xml']) {
    assert.equal(statSync(join(stackHome, file)).mode & 0o777, 0o600, file);
  }
  // Plaintext Kafka, http and a missing login are all turned away.
  assert.equal(await kafkaHealthy(up.brokers), false, 'a plaintext Kafka client');
  assert.equal(await kafkaHealthy(up.brokers, { security: { tls: up.security.kafka!.tls } }), false, 'TLS without a login');
  const ca = up.security.registry!.tls;
  await assert.rejects(httpGet(up.registryUrl.replace('https:', 'http:') + '/subjects'), 'the registry over http');
  assert.equal((await httpGet(`${up.registryUrl}/subjects`, { tls: ca })).status, 401, 'the registry without a login');
  assert.equal((await httpGet(`${new URL(up.registryUrl).origin}/health/ready`, { tls: ca })).status, 200, 'its health stays open');
  await assert.rejects(httpGet(up.clickhouseUrl.replace('https:', 'http:') + '/ping'), 'ClickHouse over http');
  assert.match(
    (await httpGet(`${up.clickhouseUrl}/?query=SELECT%201`, { tls: ca })).body,
    /Unknown user default/,
    'ClickHouse default user',
  );
});

test('every SASL mechanism logs in to Kafka over TLS: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512', async () => {
  const tls = readCaFile(settings.KAFKA_TLS_CA_FILE, 'KAFKA_TLS_CA_FILE');
  const secret = readSecretFile(settings.KAFKA_SASL_PASSWORD_FILE, 'KAFKA_SASL_PASSWORD_FILE');
  for (const mechanism of SASL_MECHANISMS) {
    const kafka = createKafka({
      brokers: parseBrokers(up.brokers),
      clientId: `secure-${mechanism}`,
      retries: 1,
      security: { tls, sasl: { mechanism, username: settings.KAFKA_SASL_USERNAME, password: secret } },
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      assert.equal((await admin.describeCluster()).brokers.length, 1, mechanism);
    } finally {
      await admin.disconnect();
    }
  }
});

/** `turnstream ARGS` on the secured stack, its output kept; `env` adds to (or, with undefined, removes from) the printed settings. */
function turnstream(
  args: string[],
  env: Record<string, string | undefined>,
): { child: ChildProcess; output: () => string; stderr: () => string; exited: Promise<number | null> } {
  const merged: NodeJS.ProcessEnv = { ...process.env, ...settings, NODE_ENV: 'test' };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete merged[k];
    else merged[k] = v;
  }
  const child = spawn(process.execPath, ['bin/turnstream.js', ...args], { cwd: REPO_ROOT, env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, stderr: () => err, exited };
}

/** Every file's text under `dir` (the stack's logs). */
const filesUnder = (dir: string): Array<{ file: string; text: string }> =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .map((file) => ({ file, text: readFileSync(file, 'latin1') }));

test(
  'the services run on it: a turn through the gateway, the session assembler and the sink into ClickHouse; no password in any log',
  { timeout: 300_000 },
  async () => {
    const secrets = { kafka: password('kafka'), registry: password('registry'), clickhouse: password('clickhouse') };
    const prefix = uniquePrefix('secure');
    const [gatewayPort] = await distinctFreePorts(1);
    // The passwords as values this time (the `_FILE` paths are what `infra up` prints): the harder case for a leak.
    const env = {
      TURNSTREAM_HOME: join(home, 'services'),
      TURNSTREAM_TOPIC_PREFIX: prefix,
      TURNSTREAM_MODEL: 'builtin',
      LOG_LEVEL: 'debug',
      KAFKA_SASL_PASSWORD_FILE: undefined,
      KAFKA_SASL_PASSWORD: secrets.kafka,
      SCHEMA_REGISTRY_PASSWORD_FILE: undefined,
      SCHEMA_REGISTRY_PASSWORD: secrets.registry,
      CLICKHOUSE_PASSWORD_FILE: undefined,
      CLICKHOUSE_PASSWORD: secrets.clickhouse,
      CLICKHOUSE_DATABASE: 'turnstream_secure',
      CLICKHOUSE_TABLE_PREFIX: prefix,
      FEEDBACK_GRACE_MS: '0',
      PORT: String(gatewayPort),
    };
    const services = [
      turnstream(['gateway'], env),
      turnstream(['process', 'session-assembler'], env),
      turnstream(['sink'], { ...env, SINK_FLUSH_MS: '200' }),
    ];
    const store = new AnalyticsStore({
      url: up.clickhouseUrl,
      ...up.security.clickhouse,
      database: 'turnstream_secure',
      tablePrefix: prefix,
    });
    try {
      const [gateway, assembler, sink] = services;
      for (const [s, ready] of [
        [gateway, /gateway listening on/],
        [assembler, /is running/],
        [sink, /is running/],
      ] as const) {
        await waitFor(`${ready} (or an exit)`, () => ready.test(s.output()) || s.child.exitCode !== null, {
          timeoutMs: 120_000,
          intervalMs: 200,
        });
        assert.equal(s.child.exitCode, null, `exited:\n${s.output().slice(-3000)}`);
      }
      const sessionId = `secure-${prefix}`;
      for (const content of ['What is the capital of France?', 'And of Japan?']) {
        const res = await fetch(`http://127.0.0.1:${gatewayPort}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-session-id': sessionId },
          body: JSON.stringify({ model: 'turnstream-tiny', max_tokens: 8, messages: [{ role: 'user', content }] }),
        });
        assert.equal(res.status, 200, await res.text());
      }
      // Two turns of the session in ClickHouse (gateway → Kafka → sink) and the first turn's pair
      // (the assembler read both, wrote the pair in a transaction, the sink stored it).
      const q = (table: string): string => `SELECT count() AS n FROM ${table} WHERE session_id = '${sessionId}'`;
      await waitFor(
        'two turns and a pair of the session in ClickHouse',
        async () =>
          Number((await store.rows<{ n: number }>(q(store.tables.turns)))[0]?.n) === 2 &&
          Number((await store.rows<{ n: number }>(q(store.tables.pairs)))[0]?.n) === 1,
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    } finally {
      for (const s of services) s.child.kill('SIGTERM');
      await Promise.all(services.map((s) => s.exited));
      await store.close();
    }
    const doctor = turnstream(['doctor', '--json', '--no-install'], env);
    assert.equal(await doctor.exited, 0, doctor.output());
    const report = JSON.parse(doctor.output().trim().split('\n').pop()!) as {
      connections: Record<string, { password: string; protocol: string }>;
    };
    assert.deepEqual(Object.fromEntries(Object.entries(report.connections).map(([k, c]) => [k, [c.protocol, c.password]])), {
      kafka: ['SASL_SSL', 'set (KAFKA_SASL_PASSWORD)'],
      registry: ['https', 'set (SCHEMA_REGISTRY_PASSWORD)'],
      clickhouse: ['https', 'set (CLICKHOUSE_PASSWORD)'],
    });
    // No password, and no basic-auth header made of one, in the services' output, doctor's, or the stack's own logs.
    const basic = (pw: string): string => Buffer.from(`turnstream:${pw}`).toString('base64');
    const needles = [...Object.values(secrets), basic(secrets.registry), basic(secrets.clickhouse)];
    const logs = [
      ...services.map((s, i) => ({ file: ['gateway', 'session-assembler', 'sink'][i], text: s.output() })),
      { file: 'doctor', text: doctor.output() },
      ...filesUnder(join(stackHome, 'logs')),
    ];
    assert.ok(logs[0].text.length > 1000 && logs[1].text.length > 1000, 'the services logged (LOG_LEVEL=debug)');
    for (const { file, text } of logs) {
      for (const needle of needles) assert.ok(!text.includes(needle), `a password (or its basic-auth header) in ${file}`);
    }
  },
);

test('a wrong password or an untrusted certificate: one line naming the setting, exit code 2', { timeout: 240_000 }, async () => {
  const otherCa = join(home, 'other-ca.pem');
  await makeCa({ key: join(home, 'other-ca.key'), cert: otherCa, subject: 'another CA', days: 2 }, 'making another CA');
  const wrongFile = join(home, 'wrong-password');
  writeFileSync(wrongFile, 'not-the-password\n', { mode: 0o600 });
  const quiet = {
    TURNSTREAM_HOME: join(home, 'failing'),
    TURNSTREAM_TOPIC_PREFIX: uniquePrefix('secure-fail'),
    LOG_LEVEL: 'silent',
    TURNSTREAM_MODEL: 'builtin',
  };
  const cases: Array<{ args: string[]; env: Record<string, string | undefined>; line: RegExp }> = [
    {
      args: ['process', 'session-assembler'],
      env: { KAFKA_SASL_PASSWORD_FILE: undefined, KAFKA_SASL_PASSWORD: 'not-the-password' },
      line: /^turnstream: Kafka at \S+ refused the SASL login of user "turnstream" \(SCRAM-SHA-512\): .*KAFKA_SASL_PASSWORD\b/,
    },
    {
      args: ['gateway'],
      env: { KAFKA_SASL_PASSWORD_FILE: wrongFile, PORT: '0' },
      line: /^turnstream: Kafka at \S+ refused the SASL login .*KAFKA_SASL_PASSWORD_FILE\b/,
    },
    {
      args: ['process', 'session-assembler'],
      env: { KAFKA_TLS_CA_FILE: otherCa },
      line: /^turnstream: Kafka at \S+ has a TLS certificate this client does not trust .*: it is not signed by the CA in KAFKA_TLS_CA_FILE=/,
    },
    {
      args: ['process', 'session-assembler'],
      env: { SCHEMA_REGISTRY_PASSWORD_FILE: wrongFile },
      line: /^turnstream: the Schema Registry at https:\S+ refused the login of user "turnstream" \(401\): check SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD_FILE\b/,
    },
    {
      args: ['process', 'session-assembler'],
      env: { SCHEMA_REGISTRY_CA_FILE: otherCa },
      line: /^turnstream: the Schema Registry at https:\S+ has a TLS certificate this client does not trust .*SCHEMA_REGISTRY_CA_FILE=/,
    },
    {
      args: ['report'],
      env: { CLICKHOUSE_PASSWORD_FILE: wrongFile },
      line: /^turnstream: ClickHouse at https:\S+ refused the login of user "turnstream" \(code 193\): check CLICKHOUSE_USER and CLICKHOUSE_PASSWORD_FILE\b/,
    },
    {
      args: ['report'],
      env: { CLICKHOUSE_CA_FILE: otherCa },
      line: /^turnstream: ClickHouse at https:\S+ has a TLS certificate this client does not trust .*CLICKHOUSE_CA_FILE=/,
    },
  ];
  const runs = cases.map((c) => ({ c, run: turnstream(c.args, { ...quiet, ...c.env }) }));
  for (const { c, run } of runs) {
    const code = await run.exited;
    // stdout may say the gateway listened before Kafka refused it; stderr is the one line.
    const lines = run.stderr().trim().split('\n');
    const what = `${c.args.join(' ')} with ${Object.keys(c.env).join(', ')}:\n${run.output().slice(-2000)}`;
    assert.equal(code, 2, what);
    assert.equal(lines.length, 1, `one line: ${what}`);
    assert.match(lines[0], c.line, what);
    assert.match(lines[0], /\(TS_ERR_INVALID_INPUT\)$/, what);
    assert.ok(!lines[0].includes('not-the-password'), `the wrong password itself is not shown: ${what}`);
  }
});
