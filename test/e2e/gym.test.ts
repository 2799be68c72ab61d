/**
 * `turnstream gym` through the real stack on the real model (SmolLM2-135M-Instruct on llama.cpp):
 * a suite the test writes (checks and a command the shipped suites do not use) runs as sandboxed
 * rollouts through the gateway; the turns (with the rollouts' metadata), the verifier's rewards,
 * the samples with group advantages are on Kafka; the learner publishes a version and the gateway
 * serves it; ClickHouse holds the rollouts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { AnalyticsStore, passRateByVersion } from '../../analytics/index.ts';
import { loadConfig } from '../../cli/config.ts';
import { loadTaskSuite, runGym, type GymResult } from '../../gym/index.ts';
import { resolveModel } from '../../policy/index.ts';
import type { Reward, Sample, Turn } from '../../schemas/index.ts';
import { createEventCodecs, createKafka, readToEnd, type TopicValues } from '../../streams/index.ts';
import { ensureStack } from '../support/stack.ts';
import { waitFor } from '../support/wait-for.ts';

/** Answers the base model gives right some of the time (so groups carry a signal), one command task. */
const SUITE = [
  {
    id: 'sun-rises',
    instruction: 'In which direction does the sun rise? Answer in at most ten words.',
    verify: { answer: { all: [{ regex_present: { regex: '\\beast', flags: 'i' } }, { not: { min_words: 11 } }] } },
  },
  {
    id: 'cat-sound',
    instruction: 'What sound does a cat make? Answer in at most ten words.',
    verify: { answer: { any: [{ regex_present: { regex: '\\bmeow', flags: 'i' } }, { regex_present: { regex: '\\bpurr', flags: 'i' } }] } },
  },
  {
    id: 'grass-color',
    instruction: 'What color is grass? Answer in at most ten words.',
    verify: { answer: { all: [{ regex_present: { regex: '\\bgreen\\b', flags: 'i' } }, { max_words: 10 }] } },
  },
  {
    id: 'ice-cold',
    instruction: 'Is ice hot or cold? Answer in at most ten words.',
    verify: { answer: { all: [{ regex_present: { regex: '\\bcold\\b', flags: 'i' } }, { max_words: 10 }] } },
  },
  {
    id: 'touch-file',
    instruction: 'Create an empty file named done.txt.',
    tools: ['bash'],
    verify: { command: 'test -f done.txt && test "$(wc -c < done.txt)" -lt 100' },
    max_turns: 2,
  },
].map((t) => ({ max_turns: 1, timeout_s: 120, tools: [], ...t }));

let dir = '';
let result: GymResult;
let stack: Awaited<ReturnType<typeof ensureStack>>;

before(async () => {
  stack = await ensureStack();
  dir = await mkdtemp(join(tmpdir(), 'gym-e2e-'));
  const file = join(dir, 'suite.jsonl');
  await writeFile(file, SUITE.map((t, i) => JSON.stringify({ ...t, split: i < 3 ? 'train' : 'eval' })).join('\n') + '\n');
  const model = await resolveModel('smollm2-135m', { cacheDir: loadConfig().model.cacheDir });
  result = await runGym({
    tasks: await loadTaskSuite(file),
    suite: 'e2e',
    brokers: [stack.brokers],
    registryUrl: stack.registryUrl,
    model: { name: model.name, path: model.path!, sha256: model.sha256! },
    systemPrompt: 'You are a helpful assistant.',
    seeds: 1,
    steps: 1,
    maxBatches: 4,
    tasksPerStep: 3,
    rolloutsPerTask: 4,
    evalEvery: 1,
    evalSamples: 1,
    maxTokens: 48,
    clickhouse: { url: stack.clickhouseUrl },
  });
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function read<K extends 'turns' | 'rewards' | 'samples'>(id: K): Promise<Array<TopicValues[K]>> {
  const kafka = createKafka({ brokers: [stack.brokers], clientId: 'gym-e2e-read' });
  const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix: result.topicPrefix } });
  const out: Array<TopicValues[K]> = [];
  await readToEnd(kafka, codecs.topic(id), async (r) => {
    if (r.value) out.push(structuredClone(await codecs.of(id).decode(r.value)) as TopicValues[K]);
  });
  return out;
}

test('one GRPO step: a new version served, held-out pass@1 before and after', { timeout: 900_000 }, () => {
  assert.equal(result.steps, 1);
  const run = result.runs[0];
  assert.equal(run.evals[0].version, 0);
  assert.ok(
    run.evals[run.evals.length - 1].version >= 1,
    'the last eval ran on a version the learner published and the gateway swapped in',
  );
  assert.deepEqual(result.tasks.test, ['ice-cold', 'touch-file'], 'the suite’s eval split, read as test');
  for (const k of ['before', 'after', 'p_value', 'wall_s'] as const) assert.equal(typeof result[k], 'number');
  assert.ok(result.time.rollouts > 0 && result.time.training > 0 && result.time.eval > 0);
});

test('the turns, rewards and samples are on Kafka: metadata, outcomes, group advantages', { timeout: 120_000 }, async () => {
  const turns = (await read('turns')) as Turn[];
  const rewards = (await read('rewards')) as Reward[];
  const samples = (await read('samples')) as Sample[];
  const train = rewards.filter((r) => r.rollout?.split === 'TRAIN');
  assert.equal(train.length, result.groups.batches * 3 * 4, 'a reward per train rollout');
  assert.ok(
    rewards.some((r) => r.rollout?.split === 'TEST'),
    'held-out rollouts are scored too',
  );
  const mainTurns = turns.filter((t) => t.turnType === 'MAIN');
  assert.ok(
    mainTurns.length >= train.length && mainTurns.every((t) => t.metadata?.gym_group),
    'every train call is a main turn with its rollout metadata',
  );
  assert.ok(
    turns.some((t) => t.turnType === 'SIDE' && t.metadata?.gym_task === 'ice-cold'),
    'held-out calls are side turns',
  );
  assert.ok(samples.length > 0 && samples.every((s) => s.group !== null && s.group !== undefined));
  // Per group, the advantages of its rollouts sum to 0 (r − mean, ÷ std).
  const byGroup = new Map<string, Map<number, number>>();
  for (const s of samples) {
    const g = byGroup.get(s.group!.groupId) ?? new Map<number, number>();
    g.set(s.group!.rolloutIndex, s.reward);
    byGroup.set(s.group!.groupId, g);
  }
  for (const [group, adv] of byGroup) {
    const sum = [...adv.values()].reduce((a, b) => a + b, 0);
    assert.ok(adv.size < 4 || Math.abs(sum) < 1e-3, `${group}: ${[...adv.values()]}`);
    assert.ok([...adv.values()].some((a) => a > 0) && [...adv.values()].some((a) => a < 0), `${group} has a signal`);
  }
});

test('ClickHouse holds the rollouts: a row per reward, pass rate by version', { timeout: 120_000 }, async () => {
  const store = new AnalyticsStore({ url: stack.clickhouseUrl });
  try {
    const modelId = result.runs[0].modelId;
    // The sink inserts every 500 ms: wait for both splits.
    const rows = await waitFor(
      'the run’s rewards in ClickHouse',
      async () => {
        const r = await store.rows<{ split: string; n: number; v: number }>(
          `SELECT split, toUInt32(count()) AS n, toInt64(max(policy_version)) AS v FROM ${store.tables.rewards} FINAL WHERE policy_model_id = '${modelId}' GROUP BY split ORDER BY split`,
        );
        return r.length === 2 && r;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.deepEqual(
      rows.map((r) => r.split),
      ['TEST', 'TRAIN'],
    );
    assert.ok(Number(rows.find((r) => r.split === 'TEST')!.v) >= 1, 'held-out rollouts of a trained version');
    // The dashboard's panel: pass rate by version, held-out, for this run's model.
    const mine = (await passRateByVersion(store)).filter((r) => r.policy_model_id === modelId && r.split === 'TEST');
    assert.deepEqual(
      mine.map((r) => r.policy_version),
      result.runs[0].evals.map((e) => e.version),
    );
    mine.forEach((r, i) => assert.equal(r.pass_rate, result.runs[0].evals[i].passAt1));
  } finally {
    await store.close();
  }
});
