/**
 * runRollout against the real gateway (llama.cpp on a tiny GGUF the test writes), with a task
 * file the test writes in the open format, using checks, commands, tools and files the shipped
 * suites do not: every task parses and runs end to end (sandbox, the built-in agent through the
 * gateway, the verifier), each call a turn of the gateway (its turn id and served version), the
 * metadata accepted, the sandbox removed afterwards.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Gateway } from '../../../gateway/index.ts';
import { runRollout } from '../../../gym/agent/run-rollout.ts';
import { loadTaskSuite } from '../../../gym/tasks/parse-task-suite.ts';
import { startTinyLlamaGateway } from '../../support/llama-gateway.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Tasks unlike the shipped ones: other tools, checks and commands, nested files, short bounds. */
const SUITE = [
  {
    id: 'checksum',
    instruction: 'Check that sub/dir/seed.txt is intact.',
    files: { 'sub/dir/seed.txt': 'seed 42\n', 'other.csv': 'a;b\n1;2\n' },
    tools: ['read_file', 'write_file'],
    verify: {
      command: "test \"$(awk -F';' 'NR==2 {print $2}' other.csv)\" = 2 && sha256sum sub/dir/seed.txt | grep -q '^[0-9a-f]\\{64\\} '",
    },
    max_turns: 2,
    timeout_s: 30,
  },
  {
    id: 'polite-no',
    instruction: 'Should I skip breakfast? Say no, politely.',
    tools: [],
    verify: {
      answer: {
        any: [
          { all: [{ starts_with: 'No' }, { not: { regex_present: { regex: 'sorry', flags: 'i' } } }] },
          { regex_count_at_least: [{ regex: '\\bno\\b', flags: 'i' }, 2] },
          { min_words: 1 },
        ],
      },
    },
    timeout_s: 30,
  },
  {
    id: 'python-only',
    instruction: 'Print the first five primes with Python.',
    tools: ['python'],
    verify: { command: 'ls -A | wc -l | grep -qx 0' },
    max_turns: 2,
    timeout_s: 30,
    split: 'eval',
  },
];

describe('runRollout through the real gateway', { timeout: 300_000 }, () => {
  let dir = '';
  let gw: Gateway;
  let url = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ts-gym-rollout-'));
    ({ gw, url } = await startTinyLlamaGateway(dir, { seed: 7 }, { contextSize: 512, parallel: 2 }));
  });
  after(async () => {
    await gw?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a task file the test writes parses and every task runs: turns of the gateway, a verdict, the sandbox gone', async () => {
    const file = join(dir, 'mine.jsonl');
    await writeFile(file, `${SUITE.map((t) => JSON.stringify(t)).join('\n')}\n`);
    const tasks = await loadTaskSuite(file);
    assert.deepEqual(
      tasks.map((t) => t.id),
      ['checksum', 'polite-no', 'python-only'],
    );
    const results = await Promise.all(
      tasks.map((task, i) =>
        runRollout(task, {
          baseURL: url,
          model: 'tiny',
          sessionId: `gym-it-${task.id}`,
          metadata: { gym_task: task.id, gym_group: 'it-group', gym_rollout: String(i) },
          sampling: { temperature: 0.7, maxTokens: 12, seed: 5 },
        }),
      ),
    );
    for (const [i, r] of results.entries()) {
      const task = tasks[i];
      assert.equal(r.taskId, task.id);
      assert.equal(r.sessionId, `gym-it-${task.id}`);
      assert.notEqual(r.stoppedBy, 'error', `${task.id}: ${r.error}`);
      assert.ok(r.steps >= 1 && r.steps <= task.maxTurns, `${task.id}: ${r.steps} steps`);
      assert.equal(r.turnIds.length, r.steps);
      assert.ok(
        r.turnIds.every((id) => UUID.test(id)),
        `the gateway's turn ids: ${r.turnIds}`,
      );
      assert.deepEqual(
        r.policyVersions,
        r.turnIds.map(() => 0),
        'version 0 served every call',
      );
      assert.equal(r.verdict.kind, 'command' in task.verify ? 'command' : 'answer');
      assert.ok(r.timings.totalMs >= r.timings.generationMs);
      const assistant = (r.messages as Array<{ role: string }>).filter((m) => m.role === 'assistant');
      assert.equal(assistant.length, r.steps);
    }
    // Commands that hold whatever the tiny model says: the files set up are there, nothing else was.
    assert.equal(results[0].verdict.passed, true, results[0].verdict.detail);
    assert.equal(results[0].verdict.reward, 1);
    // Sandbox folders are named after the process that made them.
    const mine = readdirSync(tmpdir()).filter((d) => d.startsWith(`turnstream-sandbox-${process.pid}-`));
    assert.deepEqual(mine, [], 'no sandbox left');
  });
});
