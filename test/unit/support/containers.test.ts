import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  detectDockerEngine,
  kafkaContainerCommand,
  kafkaContainerEnvironment,
  kafkaStarterScript,
  noDockerEngineError,
} from '../../support/containers.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';

/** A fake engine: `ok` answers /_ping like Docker, `hang` accepts and never answers, `error` answers 500. */
async function fakeEngine(
  listenOn: string | 0,
  behaviour: 'ok' | 'hang' | 'error',
): Promise<{ server: Server; port: number; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    if (behaviour === 'hang') return;
    if (behaviour === 'error') {
      res.writeHead(500).end('engine broken');
      return;
    }
    if (req.url === '/_ping') res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) =>
    typeof listenOn === 'string' ? server.listen(listenOn, resolve) : server.listen(0, '127.0.0.1', resolve),
  );
  const port = typeof listenOn === 'string' ? 0 : (server.address() as AddressInfo).port;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const withDir = async (fn: (dir: string) => Promise<void>): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), 'turnstream-docker-'));
  try {
    await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
const noProps = (dir: string): string => join(dir, 'absent.properties');

/** Runs `fn` in a fresh folder; the fake engines it starts with `start` are closed after it, whatever happens. */
const withFakeEngines = (fn: (dir: string, start: typeof fakeEngine) => Promise<void>): Promise<void> =>
  withDir(async (dir) => {
    const started: Array<ReturnType<typeof fakeEngine>> = [];
    try {
      await fn(dir, (listenOn, behaviour) => {
        const engine = fakeEngine(listenOn, behaviour);
        started.push(engine);
        return engine;
      });
    } finally {
      await Promise.all(started.map(async (engine) => (await engine).close()));
    }
  });

test('no socket and nothing configured: no engine, found out without waiting', async () => {
  await withDir(async (dir) => {
    const t = Date.now();
    const probe = await detectDockerEngine({
      env: {},
      sockets: [join(dir, 'docker.sock')],
      propertiesFile: noProps(dir),
      timeoutMs: 1_500,
    });
    assert.equal(probe.engine, undefined);
    assert.ok(Date.now() - t < 200, `took ${Date.now() - t} ms`);
    assert.deepEqual(probe.tried, [`unix://${join(dir, 'docker.sock')} (socket): no such socket`]);
  });
});

test('a socket that answers /_ping with OK is the engine', async () => {
  await withFakeEngines(async (dir, start) => {
    const sock = join(dir, 'docker.sock');
    await start(sock, 'ok');
    const probe = await detectDockerEngine({ env: {}, sockets: [join(dir, 'absent.sock'), sock], propertiesFile: noProps(dir) });
    assert.deepEqual(probe.engine, { dockerHost: `unix://${sock}`, source: 'socket' });
    assert.match(probe.tried[1], /: OK$/);
  });
});

test('a socket that accepts but never answers is no engine, within the bound', async () => {
  await withFakeEngines(async (dir, start) => {
    const sock = join(dir, 'docker.sock');
    await start(sock, 'hang');
    const t = Date.now();
    const probe = await detectDockerEngine({ env: {}, sockets: [sock], propertiesFile: noProps(dir), timeoutMs: 300 });
    const ms = Date.now() - t;
    assert.equal(probe.engine, undefined);
    assert.ok(ms >= 250 && ms < 1_000, `took ${ms} ms`);
    assert.match(probe.tried[0], /no answer within 300 ms/);
  });
});

test('an engine that answers with an error, or a socket file nobody listens on, is no engine', async () => {
  await withFakeEngines(async (dir, start) => {
    const broken = join(dir, 'broken.sock');
    const stale = join(dir, 'stale.sock');
    writeFileSync(stale, ''); // a leftover file: connecting to it fails at once
    await start(broken, 'error');
    const probe = await detectDockerEngine({ env: {}, sockets: [broken, stale], propertiesFile: noProps(dir) });
    assert.equal(probe.engine, undefined);
    assert.match(probe.tried[0], /HTTP 500/);
    assert.doesNotMatch(probe.tried[1], /OK$/);
  });
});

test('the first answering socket in the list wins, though all are pinged at once', async () => {
  await withFakeEngines(async (dir, start) => {
    const slow = join(dir, 'a.sock');
    const fast = join(dir, 'b.sock');
    await start(slow, 'ok');
    await start(fast, 'ok');
    const probe = await detectDockerEngine({ env: {}, sockets: [slow, fast], propertiesFile: noProps(dir) });
    assert.equal(probe.engine?.dockerHost, `unix://${slow}`);
  });
});

test('DOCKER_HOST (unix:// or tcp://) is the only address tried when set', async () => {
  await withFakeEngines(async (dir, start) => {
    const sock = join(dir, 'docker.sock');
    await start(sock, 'ok');
    const tcp = await start(0, 'ok');
    const viaUnix = await detectDockerEngine({ env: { DOCKER_HOST: `unix://${sock}` }, sockets: [], propertiesFile: noProps(dir) });
    assert.deepEqual(viaUnix.engine, { dockerHost: `unix://${sock}`, source: 'DOCKER_HOST' });

    const viaTcp = await detectDockerEngine({
      env: { DOCKER_HOST: `tcp://127.0.0.1:${tcp.port}` },
      sockets: [],
      propertiesFile: noProps(dir),
    });
    assert.deepEqual(viaTcp.engine, { dockerHost: `tcp://127.0.0.1:${tcp.port}`, source: 'DOCKER_HOST' });

    // A dead DOCKER_HOST is not silently replaced by a socket testcontainers would not use.
    const dead = await detectDockerEngine({
      env: { DOCKER_HOST: `unix://${join(dir, 'gone.sock')}` },
      sockets: [sock],
      propertiesFile: noProps(dir),
    });
    assert.equal(dead.engine, undefined);
    assert.equal(dead.tried.length, 1);
    assert.match(dead.tried[0], /gone\.sock \(DOCKER_HOST\): no such socket/);

    const ssh = await detectDockerEngine({ env: { DOCKER_HOST: 'ssh://me@build-box' }, sockets: [sock], propertiesFile: noProps(dir) });
    assert.equal(ssh.engine, undefined);
    assert.match(ssh.tried[0], /ssh:\/\/ addresses are not probed/);
  });
});

test('~/.testcontainers.properties: tc.host comes first, docker.host when DOCKER_HOST is unset', async () => {
  await withFakeEngines(async (dir, start) => {
    const sock = join(dir, 'docker.sock');
    await start(sock, 'ok');
    const cloud = await start(0, 'ok');
    const props = join(dir, 'tc.properties');
    writeFileSync(props, `# testcontainers\ndocker.host=unix://${sock}\n`);
    const viaProps = await detectDockerEngine({ env: {}, sockets: [], propertiesFile: props });
    assert.deepEqual(viaProps.engine, { dockerHost: `unix://${sock}`, source: 'docker.host' });

    writeFileSync(props, `docker.host=unix://${sock}\ntc.host=tcp://127.0.0.1:${cloud.port}\n`);
    const viaTc = await detectDockerEngine({ env: {}, sockets: [], propertiesFile: props });
    assert.deepEqual(viaTc.engine, { dockerHost: `tcp://127.0.0.1:${cloud.port}`, source: 'tc.host' });
  });
});

test('the error of containers-without-engine says what was tried and what to do', () => {
  const err = noDockerEngineError({ engine: undefined, tried: ['unix:///var/run/docker.sock (socket): no such socket'] });
  assert.ok(err instanceof TurnstreamError);
  assert.equal(err.code, ErrorCodes.PREREQUISITE);
  assert.match(err.message, /TURNSTREAM_TEST_STACK=containers, but no Docker engine/);
  assert.match(err.message, /\/var\/run\/docker\.sock \(socket\): no such socket/);
  assert.match(err.message, /TURNSTREAM_TEST_STACK=auto or native/);
});

test('Kafka advertises the mapped host port to clients and the container hostname between brokers', () => {
  const script = kafkaStarterScript('localhost:32781', 'a1b2c3d4e5f6');
  assert.match(script, /^#!\/bin\/bash\n/);
  assert.match(script, /export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT:\/\/localhost:32781,BROKER:\/\/a1b2c3d4e5f6:9093\n/);
  assert.match(script, /exec \/etc\/kafka\/docker\/run\n$/);
  // The container waits for exactly that script before starting Kafka.
  const [, , waitLoop] = kafkaContainerCommand();
  const target = /exec (\S+)$/.exec(waitLoop)?.[1];
  assert.ok(target && waitLoop.includes(`[ ! -f ${target} ]`));
});

test('Kafka container settings: every listener has a protocol, advertised ones exist, one-node factors, no auto-create', () => {
  const env = kafkaContainerEnvironment();
  const listeners = env.KAFKA_LISTENERS.split(',').map((l) => l.split('://')[0]);
  const protocols = new Set(env.KAFKA_LISTENER_SECURITY_PROTOCOL_MAP.split(',').map((p) => p.split(':')[0]));
  assert.deepEqual(
    listeners.filter((l) => !protocols.has(l)),
    [],
  );
  assert.ok(listeners.includes(env.KAFKA_INTER_BROKER_LISTENER_NAME));
  assert.ok(listeners.includes(env.KAFKA_CONTROLLER_LISTENER_NAMES));
  const advertised = /KAFKA_ADVERTISED_LISTENERS=(\S+)/
    .exec(kafkaStarterScript('h:1', 'c'))![1]
    .split(',')
    .map((l) => l.split('://')[0]);
  assert.deepEqual(
    advertised.filter((l) => !listeners.includes(l)),
    [],
  );
  assert.ok(!advertised.includes(env.KAFKA_CONTROLLER_LISTENER_NAMES), 'the controller listener is never advertised');
  assert.equal(env.KAFKA_PROCESS_ROLES, 'broker,controller');
  assert.equal(env.KAFKA_AUTO_CREATE_TOPICS_ENABLE, 'false');
  for (const k of [
    'KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR',
    'KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR',
    'KAFKA_TRANSACTION_STATE_LOG_MIN_ISR',
  ]) {
    assert.equal(env[k], '1', k);
  }
});
