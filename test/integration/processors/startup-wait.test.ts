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
import { getFreePort } from '../../../infra/index.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../../support/stack.ts';
import { TcpProxy } from '../gateway/tcp-proxy.ts';
import { waitFor } from '../../support/wait-for.ts';

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
    const waiting = () => /waiting for the schema registry/.test(out);
    await waitFor('word of waiting for the registry (or an exit)', () => waiting() || child.exitCode !== null, {
      timeoutMs: 90_000,
      intervalMs: 200,
    }).catch(() => assert.fail(`no word of waiting:\n${out}`));
    if (!waiting()) assert.fail(`the processor exited instead of waiting:\n${out}`);
    // Each retry says so again: three of them, the process still there, is waiting rather than giving up.
    const attempts = () => out.match(/waiting for the schema registry/g)?.length ?? 0;
    await waitFor('three attempts to reach the registry (or an exit)', () => attempts() >= 3 || child.exitCode !== null, {
      timeoutMs: 90_000,
      intervalMs: 200,
    });
    assert.equal(child.exitCode, null, 'still waiting, not exited');
    await proxy.start();
    const running = () => /is running/.test(out);
    await waitFor('the processor to start once the registry answered (or exit)', () => running() || child.exitCode !== null, {
      timeoutMs: 90_000,
      intervalMs: 200,
    }).catch(() => assert.fail(`did not start once the registry answered:\n${out}`));
    if (!running()) assert.fail(`exited:\n${out}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await proxy.stop();
    rmSync(home, { recursive: true, force: true });
  }
});
