/**
 * `turnstream gym` through the real stack on the real model (SmolLM2-135M-Instruct on llama.cpp):
 * a suite the test writes (checks and a command the shipped suites do not use) runs as sandboxed
 * rollouts through the gateway; the turns (with the rollouts' metadata), the verifier's rewards,
 * the samples with group advantages are on Kafka; the learner publishes a version and the gateway
 * serves it; ClickHouse holds the rollouts, and the dashboard draws the run's training panels from
 * them in headless Chromium.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { passRateBySplit, passRateByVersion, startDashboard, trainingByVersion } from '../../analytics/index.ts';
import { AnalyticsStore } from '../../warehouse/index.ts';
import { loadConfig } from '../../cli/config.ts';
import { loadTaskSuite, runGym, type GymResult } from '../../gym/index.ts';
import { resolveModel } from '../../policy/index.ts';
import type { Reward, Sample, Turn } from '../../schemas/index.ts';
import { createEventCodecs, createKafka, readToEnd, type TopicValues } from '../../streams/index.ts';
import { CANVAS_INK, launchChromium, type CanvasInk } from '../support/chromium.ts';
import { ensureStack, REPO_ROOT } from '../support/stack.ts';
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

test(
  'the dashboard draws the run: loss, KL, clip fraction, reward, mismatch, samples, step time, pass rates by split and part',
  { timeout: 180_000 },
  async () => {
    const store = new AnalyticsStore({ url: stack.clickhouseUrl });
    const model = result.runs[0].modelId;
    const profile = await mkdtemp(join(tmpdir(), 'gym-e2e-chromium-'));
    const dashboard = await startDashboard({ store, port: 0, refreshMs: 1000 });
    const browser = await launchChromium(profile);
    try {
      // The versions the learner published and the rollouts of every version, as the sink stored them.
      const published = result.runs[0].evals.at(-1)!.version;
      await waitFor(
        'the run’s versions and rollouts in ClickHouse',
        async () =>
          (await trainingByVersion(store, model)).length >= published &&
          new Set((await passRateBySplit(store, model)).map((r) => r.split)).size === 2,
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      const versions = await trainingByVersion(store, model);
      const passRates = await passRateBySplit(store, model);
      const page = await browser.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      await page.goto(`${dashboard.url}/dashboard?model=${encodeURIComponent(model)}`);
      await page.waitForFunction('(window.turnstreamDashboard?.refreshes ?? 0) >= 1', undefined, { timeout: 60_000 });
      const state = (await page.evaluate('({ ...window.turnstreamDashboard, charts: undefined })')) as {
        error: string | null;
        points: Record<string, number>;
        training: { model: string; versions: number; pass_rates: number };
      };
      assert.equal(state.error, null);
      assert.equal(state.training.model, model);
      assert.equal(state.training.versions, versions.length);
      assert.equal(state.training.pass_rates, passRates.length);
      // Every version has its learner's figures and a step time; the mismatch is measured per step.
      const n = versions.length;
      assert.ok(n >= 1);
      for (const v of versions)
        assert.ok(v.step_seconds! > 0 && v.samples > 0 && v.tokens > 0 && v.logprob_drift !== null, JSON.stringify(v));
      assert.deepEqual(
        ['train-loss', 'train-reward', 'train-mismatch', 'train-volume', 'train-step'].map((id) => state.points[id]),
        [3 * n, n, 4 * n, 2 * n, n],
      );
      // Pass rates of the train and test splits, and of each verdict part (one verifier is a part named after its kind).
      assert.deepEqual([...new Set(passRates.map((r) => r.split))].sort(), ['TEST', 'TRAIN']);
      assert.ok(passRates.every((r) => Object.keys(r.parts).length > 0));
      assert.equal(state.points['train-splits'], passRates.filter((r) => r.pass_rate !== null).length);
      assert.equal(
        state.points['train-parts'],
        passRates.reduce((k, r) => k + Object.keys(r.parts).length, 0),
      );
      const ink = (await page.evaluate(CANVAS_INK)) as CanvasInk;
      const train = ink.filter((c) => c.id.startsWith('chart-train-'));
      assert.equal(train.length, 7);
      for (const c of train) assert.ok(c.painted > c.total * 0.005, `${c.id} is drawn (${c.painted} of ${c.total} pixels)`);
      assert.equal(await page.locator('#train-pass tbody tr').count(), passRates.length);
      assert.match(
        await page.locator('#training-summary').innerText(),
        new RegExp(`^${n} versions? published, the last v${versions.at(-1)!.version} at .*; mean step [\\d.]+ s$`),
      );
      await page.screenshot({ path: join(tmpdir(), `turnstream-dashboard-${model}.png`), fullPage: true });
      assert.deepEqual(pageErrors, []);
    } finally {
      await browser.close();
      await dashboard.close();
      await store.close();
      await rm(profile, { recursive: true, force: true });
    }
  },
);

test('Ctrl-C stops a run: the services stop, one line says so, exit 130', { timeout: 300_000 }, async () => {
  const child = spawn(process.execPath, ['bin/turnstream.js', 'gym', '--tasks', join(dir, 'suite.jsonl'), '--seeds', '1', '--steps', '1'], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await waitFor('the run to start', () => /gym: tfjs backend/.test(out) || child.exitCode !== null, {
    timeoutMs: 240_000,
    intervalMs: 200,
  });
  child.kill('SIGINT');
  assert.equal(await exited, 130, out);
  assert.match(out, /gym: stopping \(Ctrl-C again to quit at once\)…\ngym: stopped\n$/, out);
  assert.doesNotMatch(out, /TS_ERR_/, 'a stop asked for is not an error');
});
