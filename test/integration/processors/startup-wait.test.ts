/**
 * Start-up order does not matter (issue 13): a processor started while the schema registry is
 * unreachable waits for it, saying so in its log, and starts once it answers; it does not exit.
 * The registry is reached through a TCP proxy that the test opens late (the shared one keeps running).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { getFreePort } from '../../../infra/index.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { TcpProxy } from '../gateway/tcp-proxy.ts';

test('a processor started before the registry waits for it and then runs', { timeout: 240_000 }, async () => {
  const stack = await ensureStack();
  const registry = new URL(stack.registryUrl);
  const proxy = new TcpProxy(registry.hostname, Number(registry.port));
  proxy.port = await getFreePort();
  const home = mkdtempSync(join(tmpdir(), 'ts-startup-wait-'));
  const child = spawn(process.execPath, ['bin/turnstream.js', 'process', 'session-assembler'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: stack.brokers,
      SCHEMA_REGISTRY_URL: `http://127.0.0.1:${proxy.port}${registry.pathname}`,
      TURNSTREAM_HOME: home,
      TURNSTREAM_TOPIC_PREFIX: uniquePrefix('startup-wait'),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  try {
    const t0 = Date.now();
    while (!/waiting for the schema registry/.test(out)) {
      assert.equal(child.exitCode, null, `the processor exited instead of waiting:\n${out}`);
      if (Date.now() - t0 > 90_000) assert.fail(`no word of waiting:\n${out}`);
      await sleep(200);
    }
    await sleep(3000);
    assert.equal(child.exitCode, null, 'still waiting, not exited');
    await proxy.start();
    const t1 = Date.now();
    while (!/is running/.test(out)) {
      assert.equal(child.exitCode, null, `exited:\n${out}`);
      if (Date.now() - t1 > 90_000) assert.fail(`did not start once the registry answered:\n${out}`);
      await sleep(200);
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await proxy.stop();
    rmSync(home, { recursive: true, force: true });
  }
});
