/** The benchmark registry and `turnstream bench`'s arguments (bench/index.ts, bench/options.ts). */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { availableBenches, loadBench, runBenchCommand } from '../../../bench/index.ts';
import { splitBenchArgs, type BenchConfig } from '../../../bench/options.ts';

const BENCH_DIR = new URL('../../../bench/', import.meta.url);
const config = {} as BenchConfig; // not reached: nothing here runs a benchmark

test('every module in bench/ that exports run() is in the registry, and only those', () => {
  const withRun = readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith('.ts') && /export (async )?function run\(/.test(readFileSync(new URL(f, BENCH_DIR), 'utf8')))
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();
  assert.deepEqual(availableBenches(), withRun);
});

test('arguments: --key value, --key=value, a bare flag; --json is the command’s; anything else is one line naming it', () => {
  assert.deepEqual(splitBenchArgs(['--steps', '2', '--backends=wasm', '--quick', '--json']), {
    options: { steps: '2', backends: 'wasm', quick: 'true' },
    help: false,
  });
  assert.equal(splitBenchArgs(['-h']).help, true);
  assert.throws(() => splitBenchArgs(['stray']), /unexpected argument "stray"/);
});

test('the list, a benchmark’s help, an unknown benchmark or option: before anything runs', async () => {
  const list = await runBenchCommand(undefined, [], config, () => {});
  assert.equal(list.exitCode, 2, 'no name is a usage error, with the list');
  for (const name of availableBenches()) assert.match(String(list.output), new RegExp(`^  ${name} `, 'm'));
  const help = await runBenchCommand('trainer', ['--help'], config, () => {});
  assert.equal(help.exitCode, 0);
  assert.match(String(help.output), /--steps/);
  await assert.rejects(
    runBenchCommand('nosuch', [], config, () => {}),
    /unknown benchmark "nosuch"; available: cli, clients/,
  );
  await assert.rejects(
    runBenchCommand('trainer', ['--nope', '1'], config, () => {}),
    /unknown option --nope/,
  );
  assert.equal((await loadBench('trainer')).options.steps.default, '3');
});
