import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { assertPortsFree, getFreePort, isPortFree, portsTakenMessage } from '../../../infra/ports.ts';
import { checkPrerequisites, findExecutable, parseJavaMajor, prerequisiteMessage } from '../../../infra/prerequisites.ts';

test('one missing program: what, why, the apt-get line, and the endpoint alternative', () => {
  const msg = prerequisiteMessage([{ name: 'clickhouse-server' }]);
  assert.match(msg, /a program is missing/);
  assert.match(msg, /clickhouse-server \(not found\)/);
  assert.match(msg, /Install: apt-get install -y clickhouse-server clickhouse-client/);
  assert.match(msg, /CLICKHOUSE_URL/);
  assert.doesNotMatch(msg, /KAFKA_BROKERS/);
});

test('several missing programs come in one message with one combined install line', () => {
  const msg = prerequisiteMessage([{ name: 'java', problem: 'java 11 found, 17+ needed' }, { name: 'mvn' }, { name: 'clickhouse-server' }]);
  assert.match(msg, /3 programs are missing/);
  assert.match(msg, /java \(java 11 found, 17\+ needed\)/);
  assert.match(msg, /mvn \(not found\)/);
  assert.match(
    msg,
    /Install: apt-get install -y openjdk-17-jre-headless && apt-get install -y maven && apt-get install -y clickhouse-server clickhouse-client/,
  );
  assert.match(msg, /KAFKA_BROKERS and SCHEMA_REGISTRY_URL \/ CLICKHOUSE_URL/);
});

test('checkPrerequisites throws ONE PREREQUISITE error naming everything missing', () => {
  let caught: unknown;
  try {
    checkPrerequisites({ java: '/nonexistent/bin/java', mvn: '/nonexistent/bin/mvn', clickhouse: '/nonexistent/bin/clickhouse-server' });
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof TurnstreamError);
  assert.equal(caught.code, ErrorCodes.PREREQUISITE);
  assert.equal(caught.retriable, false);
  assert.match(caught.message, /- java \(\/nonexistent\/bin\/java not found\)/);
  for (const name of ['mvn', 'clickhouse-server']) assert.match(caught.message, new RegExp(`- ${name} \\(not found\\)`));
});

test('checkPrerequisites with nothing needed passes', () => {
  assert.doesNotThrow(() => checkPrerequisites({}));
});

test('java versions parse from both the old and the new -version formats', () => {
  assert.equal(parseJavaMajor('openjdk version "17.0.15" 2025-04-15'), 17);
  assert.equal(parseJavaMajor('java version "1.8.0_392"'), 8);
  assert.equal(parseJavaMajor('openjdk version "21" 2023-09-19'), 21);
  assert.equal(parseJavaMajor('command not found'), undefined);
});

test('findExecutable finds programs on PATH and not directories or missing files', () => {
  assert.equal(findExecutable('sh', '/bin:/usr/bin') !== undefined, true);
  assert.equal(findExecutable('definitely-not-a-program-xyz', '/bin:/usr/bin'), undefined);
  assert.equal(findExecutable('/usr'), undefined);
});

test('taken ports: the message names service, address and the flag that moves it', () => {
  const msg = portsTakenMessage('127.0.0.1', [
    { service: 'Kafka', port: 9092, flag: '--kafka-port' },
    { service: 'ClickHouse HTTP', port: 8123, flag: '--clickhouse-port' },
  ]);
  assert.match(msg, /^ports already in use by another program: Kafka needs 127\.0\.0\.1:9092, ClickHouse HTTP needs 127\.0\.0\.1:8123\./);
  assert.match(msg, /ss -ltnp \| grep -E ':\(9092\|8123\)\\b'/);
  assert.match(msg, /--kafka-port <port> --clickhouse-port <port>/);
});

test('assertPortsFree detects a port someone listens on, and only that one', async () => {
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port: 0 }, r));
  const busy = (server.address() as { port: number }).port;
  const free = await getFreePort();
  try {
    assert.equal(await isPortFree('127.0.0.1', busy), false);
    assert.equal(await isPortFree('127.0.0.1', free), true);
    await assert.rejects(
      assertPortsFree('127.0.0.1', [
        { service: 'Kafka', port: busy, flag: '--kafka-port' },
        { service: 'Schema Registry', port: free, flag: '--registry-port' },
      ]),
      (err: unknown) => {
        assert.ok(err instanceof TurnstreamError);
        assert.equal(err.code, ErrorCodes.PREREQUISITE);
        assert.match(err.message, new RegExp(`^port already in use by another program: Kafka needs 127\\.0\\.0\\.1:${busy}\\.`));
        assert.doesNotMatch(err.message, /Schema Registry/);
        return true;
      },
    );
  } finally {
    await new Promise((r) => server.close(r));
  }
});
