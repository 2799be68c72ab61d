/**
 * `turnstream up` as a child process against the shared stack (given as endpoints, so `up`
 * starts no infra of its own), for the e2e tests that run it: spawned with its output gathered,
 * waited on until it says it is up, and stopped with Ctrl-C, checking that every service went.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { getFreePort } from '../../infra/index.ts';
import type { ensureStack } from './stack.ts';
import { waitFor } from './wait-for.ts';

/** Whether a process with this pid still runs. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Where and how to run `up`. */
export interface UpOptions {
  /** The command line before `up` (the executable, then its first arguments). */
  command: readonly [string, ...string[]];
  cwd: string;
  /** The environment to start from; the stack's endpoints and the settings below are set over it. */
  env: NodeJS.ProcessEnv;
  stack: Awaited<ReturnType<typeof ensureStack>>;
  /** TURNSTREAM_HOME. */
  home: string;
  /** TURNSTREAM_TOPIC_PREFIX. */
  topicPrefix: string;
}

/** A running `up`. */
export interface RunningUp {
  /** The gateway's PORT (a free one). */
  port: number;
  /** All it printed so far, stdout and stderr together. */
  output(): string;
  /**
   * Waits until it says it is up, every service ready and the trainer on native TensorFlow; fails
   * with its output if it does not, or exits first.
   */
  ready(): Promise<void>;
  /** Ctrl-C: it exits 0 (within a minute), says it stopped, and every pid it printed is gone. */
  stop(): Promise<void>;
}

/** Spawns `<command> up --dashboard-port …` on free ports, with LOG_LEVEL=warn. */
export async function spawnUp(o: UpOptions): Promise<RunningUp> {
  const [file, ...args] = o.command;
  const port = await getFreePort();
  const dashboardPort = await getFreePort();
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(file, [...args, 'up', '--dashboard-port', String(dashboardPort)], {
    cwd: o.cwd,
    env: {
      ...o.env,
      KAFKA_BROKERS: o.stack.brokers,
      SCHEMA_REGISTRY_URL: o.stack.registryUrl,
      CLICKHOUSE_URL: o.stack.clickhouseUrl,
      TURNSTREAM_HOME: o.home,
      TURNSTREAM_TOPIC_PREFIX: o.topicPrefix,
      PORT: String(port),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    port,
    output: () => out,
    async ready() {
      await waitFor('up to come up (or exit)', () => /turnstream is up/.test(out) || child.exitCode !== null, {
        timeoutMs: 300_000,
        intervalMs: 500,
      }).catch(() => assert.fail(`up did not come up:\n${out}`));
      if (!/turnstream is up/.test(out)) assert.fail(`up exited early:\n${out}`);
      assert.match(out, /turnstream is up\. Ctrl-C/, `every service is ready:\n${out}`);
      // Issue #37: the trainer on native TensorFlow, fetched and built (or found in the cache) by up itself.
      assert.match(
        out,
        /native TensorFlow \(cpu\) (built in \d+ s|ready): the trainer runs on it/,
        `the trainer on native TensorFlow:\n${out}`,
      );
    },
    async stop() {
      const pids = [...out.matchAll(/pid[ =:]+(\d+)/g)].map((m) => Number(m[1]));
      child.kill('SIGINT');
      const code = await Promise.race([exited, sleep(60_000).then(() => 'timeout' as const)]);
      if (code === 'timeout') child.kill('SIGKILL');
      assert.equal(code, 0, `up exits 0 after Ctrl-C:\n${out}`);
      assert.match(out, /turnstream: stopped\./);
      for (const pid of pids) assert.equal(alive(pid), false, `service pid ${pid} is gone`);
    },
  };
}
