/**
 * `turnstream chaos` end to end, on two of its scenarios (the whole suite takes ~10 minutes and
 * is run by hand: its table is in docs/operations.md): it starts a stack of its own on free ports, kills
 * the gateway mid-traffic and sends a 3 MB turn, and reports nothing lost or doubled, as one
 * JSON object, then stops what it started. `chaos --cluster` likewise, on its scale event: the
 * judge's group scaled from three instances to one and back under load, on three brokers and two
 * gateways (its whole suite, ~13 minutes, is in docs/deployment.md).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ChaosResult } from '../../bench/chaos/run-chaos.ts';
import { REPO_ROOT } from '../support/stack.ts';

/** `turnstream chaos --json --calls 12 …args` on a stack of its own: its exit code, its one JSON object and its progress lines. */
async function chaos(args: string[]): Promise<{ code: number | null; result: ChaosResult; err: string }> {
  const env = { ...process.env };
  for (const k of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'CLICKHOUSE_URL']) delete env[k];
  const child = spawn(
    process.execPath,
    ['bin/turnstream.js', 'chaos', '--json', '--calls', '12', '--dist-dir', join(REPO_ROOT, '.turnstream'), ...args],
    { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  return { code, result: JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as ChaosResult, err };
}

test('turnstream chaos --json: kill -9 of the gateway and a 3 MB turn lose and double nothing', { timeout: 900_000 }, async () => {
  const { code, result, err } = await chaos(['--only', 'kill -9 gateway,oversized']);
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

test(
  'turnstream chaos --cluster --json: a processor group scaled 3 → 1 → 3 under load, on three brokers and two gateways, loses and doubles nothing',
  { timeout: 900_000 },
  async () => {
    const { code, result, err } = await chaos(['--cluster', '--only', 'judge scaled']);
    assert.equal(code, 0, `exit code 0 when it passes:\n${err.slice(-3000)}`);
    assert.equal(result.ok, true);
    assert.deepEqual(result.cluster, { brokers: 3, gateways: 2, instances_per_processor: 3, affinity: 'session' });
    const [s] = result.scenarios;
    assert.equal(s.scenario, 'judge scaled 3 → 1 → 3');
    assert.deepEqual([s.lost, s.doubled], [0, 0]);
    assert.ok(
      s.answered >= 12 && s.pairs >= s.answered && s.judgements >= s.answered && s.clickhouse_rows >= s.answered,
      JSON.stringify(s),
    );
    // The group settled on one instance, then on three again (each step waited for a Stable group of that size).
    assert.ok(Number(s.details.step0_1_instances_s) > 0 && Number(s.details.step1_3_instances_s) > 0, JSON.stringify(s.details));
    assert.match(err, /judge-i2: stopped[^]*judge-i1: stopped[^]*1 instance: settled[^]*3 instances: settled/);
    // Both gateways came up, each on a home of its own (each conversation on one of the two, by session).
    assert.match(err, /gateway-a: ready[^]*gateway-b: ready|gateway-b: ready[^]*gateway-a: ready/);
  },
);
