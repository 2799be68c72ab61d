import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectDockerEngine, type DockerProbe } from '../../support/containers.ts';
import { parseTestStackMode, selectTestStack, type GivenEndpoints } from '../../support/stack.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';

const none: GivenEndpoints = { kafkaBrokers: undefined, schemaRegistryUrl: undefined, clickhouseUrl: undefined };
const all: GivenEndpoints = {
  kafkaBrokers: '127.0.0.1:9092',
  schemaRegistryUrl: 'http://127.0.0.1:8081/apis/ccompat/v7',
  clickhouseUrl: 'http://127.0.0.1:8123',
};
const engine = { dockerHost: 'unix:///var/run/docker.sock', source: 'socket' as const };
const found = async (): Promise<DockerProbe> => ({ engine, tried: ['unix:///var/run/docker.sock (socket): OK'] });
const missing = async (): Promise<DockerProbe> => ({ engine: undefined, tried: ['unix:///var/run/docker.sock (socket): no such socket'] });
const mustNotProbe = async (): Promise<DockerProbe> => assert.fail('the Docker engine must not be looked for');

test('TURNSTREAM_TEST_STACK: unset or empty is auto, case does not matter, anything else is refused', () => {
  assert.equal(parseTestStackMode(undefined), 'auto');
  assert.equal(parseTestStackMode(' '), 'auto');
  assert.equal(parseTestStackMode('Native'), 'native');
  assert.equal(parseTestStackMode('containers'), 'containers');
  assert.throws(
    () => parseTestStackMode('docker'),
    (err: unknown) =>
      err instanceof TurnstreamError && err.code === ErrorCodes.INVALID_INPUT && /auto, native or containers/.test(err.message),
  );
});

test('all three endpoints given win in every mode: nothing starts and no engine is looked for', async () => {
  for (const mode of ['auto', 'native', 'containers'] as const) {
    const s = await selectTestStack(mode, all, mustNotProbe);
    assert.equal(s.provider, 'given', mode);
  }
});

test('native is native without looking for an engine', async () => {
  assert.equal((await selectTestStack('native', none, mustNotProbe)).provider, 'native');
});

test('auto: containers when an engine answers, the native stack when none does', async () => {
  const withEngine = await selectTestStack('auto', none, found);
  assert.equal(withEngine.provider, 'containers');
  assert.deepEqual(withEngine.provider === 'containers' && withEngine.engine, engine);
  assert.equal((await selectTestStack('auto', none, missing)).provider, 'native');
  // Some endpoints given: the rest still come from the chosen provider.
  assert.equal((await selectTestStack('auto', { ...none, kafkaBrokers: '127.0.0.1:9092' }, found)).provider, 'containers');
  assert.equal((await selectTestStack('auto', { ...none, kafkaBrokers: '127.0.0.1:9092' }, missing)).provider, 'native');
});

test('containers without an engine is one clear error, not a fallback', async () => {
  await assert.rejects(
    selectTestStack('containers', none, missing),
    (err: unknown) =>
      err instanceof TurnstreamError &&
      err.code === ErrorCodes.PREREQUISITE &&
      /TURNSTREAM_TEST_STACK=containers, but no Docker engine answers/.test(err.message) &&
      /no such socket/.test(err.message),
  );
  assert.equal((await selectTestStack('containers', none, found)).provider, 'containers');
});

test('auto with a hanging engine socket falls back to native within the probe bound', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnstream-stack-'));
  const sock = join(dir, 'docker.sock');
  const server = createServer(() => {}); // accepts, never answers
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  try {
    const t = Date.now();
    const s = await selectTestStack('auto', none, () =>
      detectDockerEngine({ env: {}, sockets: [sock], propertiesFile: join(dir, 'none'), timeoutMs: 400 }),
    );
    const ms = Date.now() - t;
    assert.equal(s.provider, 'native');
    assert.ok(ms < 1_200, `took ${ms} ms`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  }
});
