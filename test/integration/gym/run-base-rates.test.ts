/**
 * `turnstream gym --base-rates` below the CLI: runBaseRates starts the gym's own gateway
 * (llama.cpp on a tiny GGUF the test writes; no Kafka), runs n rollouts of every task through
 * it with the gym's sampling, and reports each task's rate and the rates per split. Verifiers
 * that hold whatever the tiny model says make the rates known in advance.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadTaskSuite, runBaseRates } from '../../../gym/index.ts';
import { writeTinyModel } from '../../../policy/index.ts';

const SUITE = [
  {
    id: 'kept',
    instruction: 'Leave seed.txt as it is.',
    files: { 'seed.txt': '42\n' },
    verify: { command: 'grep -qx 42 seed.txt' },
    split: 'train',
  },
  { id: 'never', instruction: 'Say anything.', tools: [], verify: { command: 'test -f absent.txt' }, split: 'train' },
  {
    id: 'held',
    instruction: 'Leave notes.txt alone.',
    files: { 'notes.txt': 'n\n' },
    verify: { command: 'test -f notes.txt' },
    split: 'eval',
  },
].map((t) => ({ max_turns: 1, timeout_s: 60, tools: ['bash'], ...t }));

describe('runBaseRates through the gym’s gateway', { timeout: 300_000 }, () => {
  let dir = '';
  let tiny: { path: string; sha256: string };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ts-gym-base-rates-'));
    // The gym's gateway gives the built-in agent a 4k context.
    tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { seed: 7, contextLength: 4096 });
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('n rollouts of every task on the base model: each task’s rate, the rates per split, the run’s settings', async () => {
    const file = join(dir, 'mine.jsonl');
    await writeFile(file, `${SUITE.map((t) => JSON.stringify(t)).join('\n')}\n`);
    const progress: string[] = [];
    const r = await runBaseRates({
      tasks: await loadTaskSuite(file),
      suite: 'mine',
      model: { name: 'tiny', path: tiny.path, sha256: tiny.sha256 },
      n: 2,
      maxTokens: 8,
      parallel: 2,
      threads: 1,
      onProgress: (line) => progress.push(line),
    });
    assert.deepEqual([r.suite, r.model, r.agent, r.n, r.temperature, r.maxTokens], ['mine', 'tiny', 'builtin', 2, 0.7, 8]);
    assert.deepEqual(
      r.tasks.map((t) => [t.id, t.split, t.n, t.passes, t.rate, t.learnable]),
      [
        ['kept', 'train', 2, 2, 1, false],
        ['never', 'train', 2, 0, 0, false],
        ['held', 'test', 2, 2, 1, false],
      ],
    );
    for (const t of r.tasks) assert.equal(t.stoppedBy.error, 0, `${t.id}: ${t.errors.join('; ')}`);
    assert.deepEqual(r.train, { tasks: 2, rate: 0.5, learnable: 0, parts: { command: 0.5 } });
    assert.deepEqual(r.test, { tasks: 1, rate: 1, learnable: 0, parts: { command: 1 } });
    // The sandbox, readied before the first rollout; then a line every round's worth of rollouts
    // (which ones ended first varies with two at a time).
    assert.equal(progress.length, 3);
    assert.match(progress[0], /^gym: sandbox (bwrap|unshare), (caps per rollout by cgroup v[12]|limits per process only \(.+\))$/);
    assert.match(progress[1], /^gym base rates: 3\/6 rollouts, [23] passed$/);
    assert.equal(progress[2], 'gym base rates: 6/6 rollouts, 4 passed');
  });
});
