/**
 * `turnstream eval --personas FILE` as a user runs it: any file in the open format is accepted
 * (here one with checks and a system prompt the shipped personas do not use), on a GGUF model
 * served by llama.cpp and trained as LoRA versions (a tiny one the test writes) as on the built-in
 * model, and a bad file or an unknown `--only` name ends the command with one line and exit 2.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeTinyModel } from '../../../../policy/index.ts';
import { LEARNER_LR, LORA_LR } from '../../../../trainer/learner.ts';
import { LORA_STEP_DEFAULTS } from '../../../../trainer/step-defaults.ts';
import { REPO_ROOT } from '../../../support/stack.ts';
import { applyRunDefaults, type EvalFlags } from '../../../../eval/index.ts';
import { waitFor } from '../../../support/wait-for.ts';

const persona = (name: string, check: unknown, system?: string) => ({
  name,
  preference: `a test preference for ${name}`,
  check,
  satisfied: ['Great, thanks!'],
  corrections: ['No, that is not what I asked. Try again, please.'],
  prompts: ['how do I make tea?', 'what is gravity?', 'how do I cook rice?', 'why is the sky blue?'],
  ...(system ? { system } : {}),
});

/** As small a run as the loop allows: 2 interactions, one seed, one step, one held-out reply per prompt. */
const SMALL_RUN = ['--interactions', '2', '--seeds', '1', '--batch-size', '2', '--held-out', '0.25', '--held-out-samples', '1'];

describe('turnstream eval --personas FILE', { timeout: 600_000 }, () => {
  let dir: string;
  let model: string;
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, ['bin/turnstream.js', 'eval', ...args], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 240_000,
      env: { ...process.env, TURNSTREAM_HOME: join(dir, 'home'), TURNSTREAM_MODEL: model, LOG_LEVEL: 'warn', ...env },
    });
  /** Runs a report-writing eval (`--out out --json` added), which must succeed: its JSON report, and its stderr. */
  const runReport = <T>(out: string, args: string[], env: Record<string, string> = {}) => {
    const r = run([...args, '--out', out, '--json'], env);
    assert.equal(r.status, 0, r.stderr.slice(-2000));
    return { report: JSON.parse(r.stdout) as T, stderr: r.stderr };
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ts-eval-cli-'));
    model = (await writeTinyModel(join(dir, 'tiny.gguf'), { seed: 7 })).path;
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a bad file: one line naming the persona and the field, exit 2, before any model loads', async () => {
    const file = join(dir, 'bad.json');
    await writeFile(
      file,
      JSON.stringify({ personas: [persona('ok-olly', { max_words: 5 }), persona('x', { all: [{ ends_with: '?' }, { max_words: 0 }] })] }),
    );
    const r = run(['--personas', file, '--json']);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'turnstream: bad.json: persona "x": check.all[1].max_words must be a positive integer (TS_ERR_INVALID_INPUT)\n');
  });

  it('--users with an open persona on a GGUF model: both arms, the shared preference named', async () => {
    const file = join(dir, 'users.json');
    await writeFile(
      file,
      JSON.stringify({ personas: [persona('dotty-dee', { regex_count_at_least: ['\\.', 1] }), persona('ann', { max_words: 5 })] }),
    );
    const { report: res } = runReport<{ persona: string; users: number; runs: Array<{ consensus: boolean; trained: number }>; lr: number }>(
      join(dir, 'out-users'),
      ['--users', '1', '--personas', file, '--only', 'dotty-dee', ...SMALL_RUN, '--max-tokens', '4'],
    );
    assert.equal(res.persona, 'dotty-dee');
    assert.equal(res.users, 1);
    assert.equal(res.lr, LORA_LR);
    assert.deepEqual(res.runs.map((x) => x.consensus).sort(), [false, true]);
    assert.ok(
      res.runs.every((x) => x.trained > 0),
      'both arms trained LoRA versions',
    );
    const two = run(['--users', '1', '--personas', file, '--only', 'dotty-dee,ann', '--json']);
    assert.equal(two.status, 2);
    assert.equal(two.stderr, 'turnstream: --users takes one persona in --only (the preference the users share) (TS_ERR_INVALID_INPUT)\n');
  });

  it('--workers 2: the (persona, seed) runs shared out over two processes, one report over all', async () => {
    const file = join(dir, 'workers.json');
    await writeFile(file, JSON.stringify({ personas: [persona('ann', { max_words: 5 }), persona('bob', { min_words: 2 })] }));
    const args = ['--workers', '2', '--personas', file, '--interactions', '2', '--seeds', '2', '--batch-size', '2'];
    const { report: res, stderr } = runReport<{
      personas: number;
      seeds: number;
      per_persona: object;
      runs: Array<{ persona: string; seed: number }>;
      p_value: number;
      step: unknown;
    }>(join(dir, 'out-workers'), [...args, '--held-out', '0.25', '--held-out-samples', '1', '--max-tokens', '4']);
    assert.deepEqual(res.step, { ...LORA_STEP_DEFAULTS, opdOnBase: false }, 'the joined report says what the runs trained with');
    assert.equal(res.personas, 2);
    assert.equal(res.seeds, 2);
    assert.deepEqual(Object.keys(res.per_persona).sort(), ['ann', 'bob']);
    assert.deepEqual(res.runs.map((x) => `${x.persona}${x.seed}`).sort(), ['ann1', 'ann2', 'bob1', 'bob2']);
    assert.equal(typeof res.p_value, 'number');
    for (const name of ['ann-seed1', 'ann-seed2', 'bob-seed1', 'bob-seed2']) assert.match(stderr, new RegExp(`eval: ${name}: `));
    // Each run's own report is kept beside the joined one.
    assert.deepEqual((await readdir(join(dir, 'out-workers', 'runs'))).sort(), ['ann-s1', 'ann-s2', 'bob-s1', 'bob-s2']);
  });

  it('--workers: a run that dies costs only itself; the report joins the others and names it, and the command fails', async () => {
    const file = join(dir, 'dies.json');
    await writeFile(file, JSON.stringify({ personas: [persona('ann', { max_words: 5 }), persona('bob', { min_words: 2 })] }));
    const out = join(dir, 'out-dies');
    const args = ['--workers', '2', '--personas', file, '--interactions', '2', '--seeds', '1', '--batch-size', '2'];
    args.push('--held-out', '0.25', '--held-out-samples', '1', '--max-tokens', '4', '--out', out, '--json');
    const child = spawn(process.execPath, ['bin/turnstream.js', 'eval', ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, TURNSTREAM_HOME: join(dir, 'home'), TURNSTREAM_MODEL: model, LOG_LEVEL: 'warn' },
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => void (stderr += b.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    // bob's run, as the parent starts it (`--only bob --seeds 1 --seed 1`), killed as an OOM kill would.
    const bob = await waitFor(
      "bob's run to start",
      () => Number(spawnSync('pgrep', ['-f', '--', '--only bob --seeds 1 --seed 1'], { encoding: 'utf8' }).stdout.trim().split('\n')[0]),
      { timeoutMs: 60_000 },
    ).catch((err: Error) => assert.fail(`${err.message}: ${stderr.slice(-2000)}`));
    process.kill(bob, 'SIGKILL');
    assert.equal(await exited, 1, stderr.slice(-2000));
    assert.match(
      stderr,
      /turnstream: 1 of 2 eval runs failed: bob seed 1 \(killed by SIGKILL\) \(their errors are above; the report in .* joins the runs that finished\) \(TS_ERR_INTERNAL\)\n$/,
    );
    const report = JSON.parse(await readFile(join(out, 'eval.json'), 'utf8')) as {
      personas: number;
      runs: Array<{ persona: string }>;
      failed_runs: string[];
    };
    assert.deepEqual(
      report.runs.map((r) => r.persona),
      ['ann'],
    );
    assert.equal(report.personas, 1);
    assert.deepEqual(report.failed_runs, ['bob seed 1 (killed by SIGKILL)']);
  });

  it('--seed outside 1..--seeds is an input error', async () => {
    const file = join(dir, 'seed.json');
    await writeFile(file, JSON.stringify({ personas: [persona('ann', { max_words: 5 })] }));
    const r = run(['--personas', file, '--seeds', '2', '--seed', '3', '--json']);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, 'turnstream: --seed must be an integer from 1 to --seeds (got 3) (TS_ERR_INVALID_INPUT)\n');
  });

  it('--peak-samples that is not a whole number >= 0 is an input error', () => {
    for (const bad of ['-1', '2.5', 'x']) {
      const r = run(['--peak-samples', bad, '--json']);
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stderr, `turnstream: --peak-samples must be an integer >= 0 (got ${bad}) (TS_ERR_INVALID_INPUT)\n`);
    }
  });

  it('--only with an unknown name is an input error that lists the known names', async () => {
    const file = join(dir, 'two.json');
    await writeFile(file, JSON.stringify({ personas: [persona('ann', { max_words: 5 }), persona('bob', { min_words: 2 })] }));
    const r = run(['--personas', file, '--only', 'ann,carl', '--json']);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr, 'turnstream: --only: unknown persona carl; known: ann, bob (TS_ERR_INVALID_INPUT)\n');
  });

  it('--quick: the two fast-learning personas when the file has them, one seed, two samples per held-out prompt', async () => {
    const file = join(dir, 'quick.json');
    const names = ['first-fay', 'concise-carl', 'second-sam', 'twosentence-tia'];
    await writeFile(file, JSON.stringify({ personas: names.map((n) => persona(n, { max_words: 30 })) }));
    const { report: result } = runReport<{
      seeds: number;
      interactions: number;
      per_persona: Record<string, unknown>;
      heldOut: { samplesPerPrompt: number };
    }>(join(dir, 'out-quick'), ['--quick', '--max-tokens', '8', '--personas', file, '--interactions', '2', '--held-out', '0.25']);
    assert.deepEqual(Object.keys(result.per_persona).sort(), ['concise-carl', 'twosentence-tia']);
    assert.equal(result.seeds, 1);
    assert.equal(result.interactions, 2, 'a value given keeps its place');
    assert.equal(result.heldOut.samplesPerPrompt, 2);
  });

  it('on a GGUF model with the shipped file: the standard run (length and layout personas, 24 interactions, every 3rd version scored, 2 workers)', async () => {
    const out = join(dir, 'out-standard');
    const { report: result } = runReport<{
      interactions: number;
      per_persona: Record<string, unknown>;
      per_version: Array<{ interactions: number }>;
    }>(out, ['--max-tokens', '8', '--seeds', '1', '--held-out-samples', '1']);
    assert.deepEqual(Object.keys(result.per_persona).sort(), ['concise-carl', 'oneparagraph-pia', 'twosentence-tia']);
    assert.equal(result.interactions, 24);
    assert.deepEqual(
      result.per_version.map((v) => v.interactions),
      [0, 6, 12, 18, 24],
      'a version every 2 interactions, every 3rd scored',
    );
    if (availableParallelism() >= 2) assert.equal((await readdir(join(out, 'runs'))).length, 3, 'one child run per persona');
  });

  for (const kind of ['gguf', 'builtin'] as const)
    it(`accepts a file with checks the shipped personas do not use, and writes the reports and latest.json (${kind} model)`, async () => {
      const file = join(dir, 'custom.json');
      await writeFile(
        file,
        JSON.stringify({
          personas: [
            persona(
              'wordy-wes',
              { any: [{ min_words: 3 }, { regex_present: { regex: '^ok', flags: 'i' } }] },
              'You are a helpful assistant.',
            ),
            persona('dotty-dee', { all: [{ not: { min_words: 40 } }, { regex_count_at_least: ['\\.', 1] }] }),
          ],
        }),
      );
      const out = join(dir, `out-${kind}`);
      // As small a run as the loop allows.
      const { report: result } = runReport<{
        personas: number;
        per_persona: Record<string, { preference: string; before: number; after: number }>;
        per_version: Array<{ interactions: number }>;
        p_value: number;
        wall_s: number;
        lr: number;
        step?: unknown;
        runs: Array<{ samples: number }>;
      }>(out, [...(kind === 'builtin' ? ['--model', 'builtin'] : ['--max-tokens', '8']), '--personas', file, ...SMALL_RUN], {
        TRAIN_PLEASED_DAMPING: '0.5',
        TRAIN_OPD_ADVANTAGE: 'distribution',
        // The hint measured on the frozen base needs a reference model, which only LoRA runs have.
        ...(kind === 'gguf' ? { TRAIN_OPD_ON_BASE: '1' } : {}),
      });
      assert.equal(result.lr, kind === 'builtin' ? LEARNER_LR : LORA_LR, 'the learning rate of the model kind');
      // TRAIN_* settings from the environment are in the report (the built-in model has no LoRA step settings).
      if (kind === 'gguf')
        assert.deepEqual(result.step, { ...LORA_STEP_DEFAULTS, opdAdvantage: 'distribution', pleasedDamping: 0.5, opdOnBase: true });
      else assert.equal(result.step, undefined);
      assert.ok(
        result.runs.every((x) => x.samples > 0),
        'every run trained on its interactions',
      );
      assert.equal(result.personas, 2);
      assert.deepEqual(Object.keys(result.per_persona).sort(), ['dotty-dee', 'wordy-wes']);
      assert.equal(result.per_persona['wordy-wes'].preference, 'a test preference for wordy-wes');
      for (const p of Object.values(result.per_persona)) assert.ok(p.before >= 0 && p.before <= 1 && p.after >= 0 && p.after <= 1);
      assert.deepEqual(
        result.per_version.map((v) => v.interactions),
        [0, 2],
      );
      assert.ok(typeof result.p_value === 'number' && result.wall_s > 0);
      assert.deepEqual((await readdir(join(out, 'curves'))).sort(), ['dotty-dee.png', 'dotty-dee.svg', 'wordy-wes.png', 'wordy-wes.svg']);
      const latest = JSON.parse(await readFile(join(dir, 'home', 'eval', 'latest.json'), 'utf8')) as {
        per_persona: object;
        finished_at: number;
      };
      assert.deepEqual(Object.keys(latest.per_persona).sort(), ['dotty-dee', 'wordy-wes']);
      assert.ok(latest.finished_at > Date.now() - 300_000);
    });
});

describe('the run defaults of turnstream eval', () => {
  const flags = (over: Partial<EvalFlags> = {}): EvalFlags =>
    ({ interactions: '36', seeds: '3', heldOutSamples: '4', evalEvery: '1', workers: '1', ...over }) as EvalFlags;
  const none = () => false;

  it('--quick: 12 interactions on the real model, 8 on the built-in one, one seed, two samples per held-out prompt', () => {
    const real = flags({ quick: true });
    applyRunDefaults(real, false, none, 2);
    assert.deepEqual(
      [real.interactions, real.seeds, real.heldOutSamples, real.evalEvery, real.workers],
      ['12', '1', '2', '3', '2'],
      'the real model: every 3rd version scored, the two personas side by side',
    );
    const builtin = flags({ quick: true });
    applyRunDefaults(builtin, true, none, 2);
    assert.deepEqual([builtin.interactions, builtin.evalEvery, builtin.workers], ['8', '1', '1']);
  });

  it('the standard run on the real model: 24 interactions, every 3rd version, at most 2 workers; a given value keeps its place', () => {
    const real = flags();
    applyRunDefaults(real, false, none, 16);
    assert.deepEqual([real.interactions, real.evalEvery, real.workers, real.seeds], ['24', '3', '2', '3']);
    const oneCore = flags();
    applyRunDefaults(oneCore, false, none, 1);
    assert.equal(oneCore.workers, '1');
    const given = flags({ interactions: '6', quick: true });
    applyRunDefaults(given, false, (flag) => flag === 'interactions', 2);
    assert.equal(given.interactions, '6');
    const builtin = flags();
    applyRunDefaults(builtin, true, none, 2);
    assert.deepEqual([builtin.interactions, builtin.evalEvery], ['36', '1'], 'the built-in model keeps the declared defaults');
    const users = flags({ users: '3' });
    applyRunDefaults(users, false, none, 2);
    assert.equal(users.interactions, '36', '--users has its own defaults');
  });
});
