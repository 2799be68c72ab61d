/**
 * `turnstream chaos` end to end, on two of its scenarios (the whole suite takes ~10 minutes and
 * is run by hand: its table is in docs/operations.md): it starts a stack of its own on free ports, kills
 * the gateway mid-traffic and sends a 3 MB turn, and reports nothing lost or doubled, as one
 * JSON object, then stops what it started.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ChaosResult } from '../../bench/chaos/run-chaos.ts';
import { REPO_ROOT } from '../support/stack.ts';

test('turnstream chaos --json: kill -9 of the gateway and a 3 MB turn lose and double nothing', { timeout: 900_000 }, async () => {
  const env = { ...process.env };
  for (const k of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'CLICKHOUSE_URL']) delete env[k];
  const child = spawn(
    process.execPath,
    [
      'bin/turnstream.js',
      'chaos',
      '--json',
      '--calls',
      '12',
      '--only',
      'kill -9 gateway,oversized',
      '--dist-dir',
      join(REPO_ROOT, '.turnstream'),
    ],
    { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  const result = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as ChaosResult;
  assert.equal(code, 0, `exit code 0 when it passes:\n${err.slice(-3000)}`);
  assert.equal(result.ok, true);
  assert.deepEqual(
    result.scenarios.map((s) => s.scenario),
    ['kill -9 gateway', 'oversized turn (3 MB)'],
  );
  for (const s of result.scenarios) {
    assert.deepEqual([s.lost, s.doubled], [0, 0], s.scenario);
    assert.ok(s.answered >= 12 && s.distinct >= s.answered && s.pairs >= s.answered && s.clickhouse_rows >= s.answered, JSON.stringify(s));
    assert.equal(typeof s.recover_s, 'number');
  }
  assert.equal(result.scenarios[1].details.oversized_answered, true);
  assert.match(err, /killed gateway/);
});
