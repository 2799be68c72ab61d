import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import type { BrowserContext } from 'playwright-core';
import {
  buildDashboardApp,
  funnel,
  listRuns,
  passRateBySplit,
  startDashboard,
  trainingByVersion,
  type DashboardHandle,
} from '../../analytics/index.ts';
import { AnalyticsStore } from '../../warehouse/index.ts';
import { learningDataset } from '../../bench/sink-dataset.ts';
import { startClickhouseSink, type ClickhouseSinkHandle } from '../../processors/clickhouse-sink/index.ts';
import type { Reward, RolloutSplit, WeightVersion } from '../../schemas/index.ts';
import { createKafka, ensureTopics, EventProducer } from '../../streams/index.ts';
import { exampleReward, exampleWeightVersion } from '../support/fixtures.ts';
import { dropTables, family, waitFor, type Family } from '../integration/analytics/support.ts';
import { CANVAS_INK, launchChromium, type CanvasInk } from '../support/chromium.ts';
import { ensureStack, uniquePrefix } from '../support/stack.ts';

interface PageState {
  points: Record<string, number>;
  refreshes: number;
  error: string | null;
}

/** `window.turnstreamDashboard.training`: the model the training panels show. */
interface TrainingState {
  model: string;
  models: string[];
  versions: number;
  pass_rates: number;
}

let kafka: Kafka;
let f: Family;
let store: AnalyticsStore;
let sink: ClickhouseSinkHandle;
let dashboard: DashboardHandle;
let browser: BrowserContext;
let profile: string;
const REPLAY = 'judge-b';
let skipped = 0;
/** What the replay holds: the dataset's pairs, and its samples but ten. */
const replayCounts = { pairs: 0, samples: 0 };

describe('analytics dashboard in headless Chromium (real Kafka and ClickHouse)', { timeout: 240000 }, () => {
  before(async () => {
    const stack = await ensureStack();
    kafka = createKafka({ brokers: [stack.brokers], clientId: 'dashboard-test' });
    f = await family(kafka, stack.registryUrl, stack.clickhouseUrl, uniquePrefix('dashboard'));
    const data = learningDataset({
      users: 4,
      sessionsPerUser: 3,
      turnsPerSession: 10,
      versions: 5,
      idPrefix: f.prefix,
      stepMs: 15000,
      startMs: Date.now() - 2 * 3600_000,
    });
    for (let i = 0; i < data.events.length; i += 200) await f.producer.sendAll(data.events.slice(i, i + 200));
    // A replay of the same history under another judge: its pairs, judgements and samples on the
    // family's `judge-b` topics (the same ids as the live ones), the first ten samples left out.
    const naming = { prefix: f.prefix, tag: REPLAY };
    await ensureTopics(kafka, { naming, partitions: 3, ids: ['pairs', 'judgements', 'samples'] });
    const replayProducer = new EventProducer(kafka, await f.codecs.withNaming(naming));
    await replayProducer.connect();
    const derived = data.events.filter((e) => e.id === 'pairs' || e.id === 'judgements' || e.id === 'samples');
    const replayed = derived.filter((e) => e.id !== 'samples' || ++skipped > 10);
    for (let i = 0; i < replayed.length; i += 200) await replayProducer.sendAll(replayed.slice(i, i + 200));
    await replayProducer.disconnect();
    sink = startClickhouseSink({
      kafka,
      codecs: f.codecs,
      analytics: f.analytics,
      groupId: `${f.prefix}sink`,
      flushIntervalMs: 200,
      replayTags: 'all',
    });
    await sink.ready;
    store = new AnalyticsStore(f.analytics);
    await waitFor('the dataset stored', async () => (await funnel(store)).samples === data.counts.samples);
    replayCounts.pairs = data.counts.pairs;
    replayCounts.samples = data.counts.samples - 10;
    await waitFor('the replay stored', async () => (await funnel(store, { tag: REPLAY })).samples === replayCounts.samples);
    // The last `turnstream eval`, as the command writes it: its curve gets a panel of its own.
    profile = mkdtempSync(join(tmpdir(), 'turnstream-chromium-'));
    const evalFile = join(profile, 'latest.json');
    writeFileSync(
      evalFile,
      JSON.stringify({
        mode: 'in-process',
        method: 'combined',
        interactions: 24,
        seeds: 3,
        before: 0.1,
        after: 0.7,
        p_value: 0.002,
        wall_s: 1800,
        finished_at: Date.now(),
        per_version: [0, 12, 24].map((n, i) => ({
          version: i * 6,
          interactions: n,
          satisfaction: 0.1 + i * 0.3,
          byPersona: { 'short-sue': 0.2 * (i + 1), 'formal-fi': 0.1 + i * 0.25 },
        })),
        per_persona: {
          'short-sue': { preference: 'short', before: 0.2, after: 0.6 },
          'formal-fi': { preference: 'formal', before: 0.1, after: 0.6 },
        },
      }),
    );
    dashboard = await startDashboard({ store, port: 0, refreshMs: 1000, evalFile });
    browser = await launchChromium(profile);
  });
  after(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await dashboard?.close();
    await sink?.stop();
    await f?.producer.disconnect();
    if (store) {
      await dropTables(store);
      await store.close();
    }
  });

  it('draws the learning curve, funnel, judges and latency from real data, and refreshes itself', async (t) => {
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${dashboard.url}/dashboard`);
    // Browser-side code as strings: this project compiles without the DOM library.
    await page.waitForFunction('(window.turnstreamDashboard?.refreshes ?? 0) >= 1', undefined, { timeout: 30000 });
    const state = (await page.evaluate('({ ...window.turnstreamDashboard, charts: undefined })')) as PageState;
    assert.equal(state.error, null);
    // Points per chart that ClickHouse data fed: 5 versions × 2 series + 4 published versions, 6 funnel stages, …
    assert.equal(state.points.learning, 5 + 5 + 4);
    assert.equal(state.points.funnel, 6);
    assert.ok(state.points.time > 10, `reward-over-time points: ${state.points.time}`);
    assert.equal(state.points.judges, 2);
    assert.equal(state.points.latency, 9, 'p50/p90/p99 for MAIN, SIDE and ALL');
    assert.equal(state.points.eval, 3 * 3, 'the eval curve: the mean and two personas at three versions');
    assert.match(await page.locator('#eval-summary').innerText(), /^0\.100 → 0\.700 over 2 personas × 3 seeds, 24 interactions each/);

    // Every chart's canvas really has ink on it.
    const ink = (await page.evaluate(CANVAS_INK)) as CanvasInk;
    assert.equal(ink.length, 14);
    // No gym run in this data: the tasks panels stay hidden and their charts undrawn.
    assert.equal(await page.locator('#gym-section').isHidden(), true);
    const undrawn = ['chart-gym', 'chart-train-splits', 'chart-train-parts'];
    for (const id of undrawn) assert.equal(ink.find((c) => c.id === id)?.painted, 0, `${id} is not drawn`);
    assert.equal(await page.locator('.train-tasks').first().isHidden(), true);
    for (const c of ink.filter((c) => !undrawn.includes(c.id)))
      assert.ok(c.painted > c.total * 0.005, `${c.id} is drawn (${c.painted} of ${c.total} pixels)`);
    // The training panels: the dataset's learner published v1–v4 (loss, KL, clip fraction, reward,
    // samples and tokens; no mismatch or step time reported, read as 0, importance weight 1).
    const training = (await page.evaluate('window.turnstreamDashboard.training')) as TrainingState;
    assert.deepEqual(training, { model: 'turnstream-tiny', models: ['turnstream-tiny'], versions: 4, pass_rates: 0 });
    assert.deepEqual(
      ['train-loss', 'train-reward', 'train-mismatch', 'train-volume', 'train-step'].map((id) => state.points[id]),
      [4 * 3, 4, 4 * 4, 4 * 2, 0],
    );
    assert.match(
      await page.locator('#training-summary').innerText(),
      /^4 versions published, the last v4 at .*; \d+ samples, 4000 tokens$/,
    );

    const kpis = await page.locator('#kpis .kpi').allInnerTexts();
    const fu = await funnel(store);
    assert.deepEqual(
      kpis.map((k) => k.replace(/\s+/g, ' ').trim()),
      [
        `${fu.turns} turns`,
        `${fu.main} main`,
        `${fu.pairs} pairs`,
        `${fu.judged} judged`,
        `${fu.samples} samples`,
        `${fu.trained} trained`,
      ],
    );
    assert.equal(await page.locator('#users tbody tr').count(), 4);

    const shot = join(tmpdir(), `turnstream-dashboard-${f.prefix.replace(/\W+/g, '')}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 50_000, 'a screenshot with content');
    t.diagnostic(`screenshot: ${shot}`);

    // New events show up without reloading: the page polls the API.
    const more = learningDataset({ users: 1, sessionsPerUser: 1, turnsPerSession: 3, versions: 1, idPrefix: `${f.prefix}more` });
    await f.producer.sendAll(more.events);
    const want = `${fu.turns + more.counts.turns} turns`;
    await page.waitForFunction(
      `[...document.querySelectorAll('#kpis .kpi')].some((k) => k.innerText.replace(/\\s+/g, ' ').trim() === ${JSON.stringify(want)})`,
      undefined,
      { timeout: 30000 },
    );
    assert.deepEqual(pageErrors, []);
    await page.close();
  });

  it('switches to a replay (?tag=) and shows it next to the live pipeline', async () => {
    const runs = await listRuns(store);
    const live = await funnel(store);
    assert.deepEqual(
      runs.map((r) => [r.tag, r.pairs, r.samples]),
      [
        ['', live.pairs, live.samples],
        [REPLAY, replayCounts.pairs, replayCounts.samples],
      ],
    );
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${dashboard.url}/dashboard`);
    await page.waitForFunction('(window.turnstreamDashboard?.refreshes ?? 0) >= 1', undefined, { timeout: 30000 });
    assert.equal(await page.locator('#compare-section').isHidden(), true, 'no comparison for the live run');
    // Choosing the replay in the run selector reloads the page on it.
    await page.selectOption('#run', REPLAY);
    await page.waitForURL(/\?tag=judge-b$/);
    await page.waitForFunction('(window.turnstreamDashboard?.refreshes ?? 0) >= 1', undefined, { timeout: 30000 });
    const state = (await page.evaluate(
      '({ tag: window.turnstreamDashboard.tag, runs: window.turnstreamDashboard.runs, error: window.turnstreamDashboard.error })',
    )) as {
      tag: string;
      runs: string[];
      error: string | null;
    };
    assert.deepEqual(state, { tag: REPLAY, runs: ['', REPLAY], error: null });
    const kpis = (await page.locator('#kpis .kpi').allInnerTexts()).map((k) => k.replace(/\s+/g, ' ').trim());
    assert.ok(kpis.includes(`${replayCounts.samples} samples`), kpis.join(' | '));
    const rows = await page.locator('#compare tbody tr').allInnerTexts();
    assert.ok(
      rows.some((r) => r.replace(/\s+/g, ' ').trim() === `samples ${live.samples} ${replayCounts.samples}`),
      rows.join(' | '),
    );
    assert.match(await page.locator('#agreement').innerText(), /judged in both: (\d+), same score: \1 \(agreement 1\)/);
    assert.deepEqual(pageErrors, []);
    await page.close();

    const bad = await fetch(`${dashboard.url}/api/funnel?tag=${encodeURIComponent('x; DROP')}`);
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'TS_ERR_INVALID_INPUT');
  });

  it('serves the JSON API, and answers 503 in the OpenAI error shape when ClickHouse is unreachable', async () => {
    const res = await fetch(`${dashboard.url}/api/funnel`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), await funnel(store));
    const sessions = (await (await fetch(`${dashboard.url}/api/sessions?user=user-1&limit=2`)).json()) as Array<{ user_id: string }>;
    assert.equal(sessions.length, 2);
    assert.ok(sessions.every((s) => s.user_id === 'user-1'));
    const chart = await fetch(`${dashboard.url}/assets/chart.umd.min.js`);
    assert.equal(chart.status, 200);
    assert.match(await chart.text(), /Chart/);

    const down = new AnalyticsStore({ url: 'http://127.0.0.1:1', database: 'turnstream_test', requestTimeoutMs: 2000 });
    const app = buildDashboardApp({ store: down });
    const r = await app.inject({ method: 'GET', url: '/api/overview' });
    assert.equal(r.statusCode, 503);
    const body = r.json() as { error: { code: string; type: string; message: string } };
    assert.equal(body.error.code, 'TS_ERR_UNAVAILABLE');
    assert.match(body.error.message, /ClickHouse/);
    // No eval run yet (or none configured): the panel stays hidden.
    assert.deepEqual((await app.inject({ method: 'GET', url: '/api/eval' })).json(), { available: false });
    await app.close();
    const noFile = buildDashboardApp({ store: down, evalFile: join(tmpdir(), 'no-such-dir', 'latest.json') });
    assert.deepEqual((await noFile.inject({ method: 'GET', url: '/api/eval' })).json(), { available: false });
    await noFile.close();
    await down.close();
  });

  it('draws a training run per version: the learner, the rollout/trainer mismatch, pass rates by split and verdict part', async () => {
    const model = `${f.prefix}gym-s1`;
    const t0 = Date.now();
    // Three versions as a GRPO run's learner publishes them, every metric known.
    const learner = [
      {
        loss: 0.5,
        meanReward: 0.25,
        kl: 0.001,
        clipFraction: 0.05,
        tokens: 800,
        logprobDrift: 0.02,
        mismatchKl: 0.0004,
        tisMean: 0.98,
        tisTruncated: 0.01,
        stepSeconds: 20,
      },
      {
        loss: 0.4,
        meanReward: 0.5,
        kl: 0.002,
        clipFraction: 0.1,
        tokens: 900,
        logprobDrift: 0.01,
        mismatchKl: 0.0002,
        tisMean: 0.99,
        tisTruncated: 0.005,
        stepSeconds: 22,
      },
      {
        loss: 0.3,
        meanReward: 0.75,
        kl: 0.003,
        clipFraction: 0.15,
        tokens: 1000,
        logprobDrift: 0.015,
        mismatchKl: 0.0003,
        tisMean: 1,
        tisTruncated: 0,
        stepSeconds: 21,
      },
    ];
    const weights: WeightVersion[] = learner.map((m, i) =>
      exampleWeightVersion({
        modelId: model,
        version: i + 1,
        parentVersion: i,
        metrics: { ...exampleWeightVersion().metrics, ...m, samples: 16 },
        createdAt: t0 + i,
      }),
    );
    // Verdicts with content and format parts: [passed content, passed format] per rollout. EVAL is
    // the held-out split of runs from before the dev split, whose rewards had no parts.
    const T = true;
    const F = false;
    const rollouts: Array<[number, RolloutSplit, boolean[][]]> = [
      [
        0,
        'TEST',
        [
          [T, T],
          [T, F],
          [F, T],
          [F, F],
        ],
      ],
      [
        0,
        'DEV',
        [
          [T, T],
          [F, T],
        ],
      ],
      [
        1,
        'TRAIN',
        [
          [T, T],
          [T, T],
          [T, T],
          [T, F],
        ],
      ],
      [
        3,
        'TEST',
        [
          [T, T],
          [T, T],
          [T, T],
          [F, T],
        ],
      ],
      [
        3,
        'DEV',
        [
          [T, T],
          [T, T],
        ],
      ],
    ];
    const rewards: Reward[] = rollouts.flatMap(([version, split, verdicts]) =>
      verdicts.map(([content, format], i) =>
        exampleReward({
          rewardId: `${model}-v${version}-${split}-${i}`,
          sessionId: `${model}-v${version}-${split}-${i}`,
          policyModelId: model,
          policyVersion: version,
          passed: content && format,
          reward: content && format ? 1 : 0,
          parts: { content, format },
          rollout: { ...exampleReward().rollout!, split, index: i },
          createdAt: t0 + 10 + i,
        }),
      ),
    );
    for (const [i, passed] of [T, F].entries())
      rewards.push(
        exampleReward({
          rewardId: `${model}-v0-EVAL-${i}`,
          policyModelId: model,
          policyVersion: 0,
          passed,
          reward: passed ? 1 : 0,
          parts: {},
          rollout: { ...exampleReward().rollout!, split: 'EVAL', index: i },
          createdAt: t0 + 20 + i,
        }),
      );
    await f.producer.sendAll([
      ...weights.map((w) => ({ id: 'weights' as const, key: w.modelId, value: w })),
      ...rewards.map((r) => ({ id: 'rewards' as const, key: r.sessionId, value: r })),
    ]);
    await waitFor(
      'the run in ClickHouse',
      async () => (await trainingByVersion(store, model)).length === 3 && (await passRateBySplit(store, model)).length === 6,
    );

    // The API: the most recently active model by default; each split's pass rate and parts.
    const api = (await (await fetch(`${dashboard.url}/api/training`)).json()) as {
      model: string;
      pass_rates: Array<{ policy_version: number; split: string; rollouts: number; pass_rate: number; parts: Record<string, number> }>;
    };
    assert.equal(api.model, model);
    assert.deepEqual(
      api.pass_rates.map((r) => [r.policy_version, r.split, r.rollouts, r.pass_rate, r.parts]),
      [
        [0, 'DEV', 2, 0.5, { content: 0.5, format: 1 }],
        [0, 'TEST', 4, 0.25, { content: 0.5, format: 0.5 }],
        [0, 'EVAL', 2, 0.5, {}],
        [1, 'TRAIN', 4, 0.75, { content: 1, format: 0.75 }],
        [3, 'DEV', 2, 1, { content: 1, format: 1 }],
        [3, 'TEST', 4, 0.75, { content: 0.75, format: 1 }],
      ],
    );
    const bad = await fetch(`${dashboard.url}/api/training?model=${encodeURIComponent("x'; DROP")}`);
    assert.equal(bad.status, 400);

    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${dashboard.url}/dashboard`);
    await page.waitForFunction('(window.turnstreamDashboard?.refreshes ?? 0) >= 1', undefined, { timeout: 30000 });
    const state = (await page.evaluate('({ ...window.turnstreamDashboard, charts: undefined })')) as PageState & {
      training: TrainingState;
    };
    assert.equal(state.error, null);
    assert.deepEqual(state.training, { model, models: [model, 'turnstream-tiny'], versions: 3, pass_rates: 6 });
    // Points per chart: 3 versions × (loss, KL, clip fraction), reward, 4 mismatch series, samples
    // and tokens, step time; pass rate of DEV (v0, v3), TEST (v0, v3), EVAL (v0), TRAIN (v1);
    // content and format of DEV, TEST and TRAIN at the same versions (EVAL has no parts).
    assert.deepEqual(
      ['train-loss', 'train-reward', 'train-mismatch', 'train-volume', 'train-step', 'train-splits', 'train-parts'].map(
        (id) => state.points[id],
      ),
      [9, 3, 12, 6, 3, 6, 10],
    );
    const ink = (await page.evaluate(CANVAS_INK)) as CanvasInk;
    for (const c of ink.filter((c) => c.id.startsWith('chart-train-')))
      assert.ok(c.painted > c.total * 0.005, `${c.id} is drawn (${c.painted} of ${c.total} pixels)`);
    assert.match(
      await page.locator('#training-summary').innerText(),
      /^3 versions published, the last v3 at .*; 48 samples, 2700 tokens; mean step 21\.0 s$/,
    );
    const rows = (await page.locator('#train-pass tbody tr').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim());
    assert.deepEqual(rows, [
      '0 DEV 2 0.500 0.500 0.500 1',
      '0 TEST 4 0.250 0.250 0.500 0.500',
      '0 EVAL 2 0.500 0.500 — —',
      '1 TRAIN 4 0.750 0.750 1 0.750',
      '3 DEV 2 1 1 1 1',
      '3 TEST 4 0.750 0.750 0.750 1',
    ]);
    const shot = join(tmpdir(), `turnstream-dashboard-training-${f.prefix.replace(/\W+/g, '')}.png`);
    await page.screenshot({ path: shot, fullPage: true });

    // The model selector: another model's run, by reloading on ?model=.
    await page.selectOption('#train-model', 'turnstream-tiny');
    await page.waitForURL(/\?model=turnstream-tiny$/);
    await page.waitForFunction('window.turnstreamDashboard?.training?.model === "turnstream-tiny"', undefined, { timeout: 30000 });
    assert.equal(await page.locator('.train-tasks').first().isHidden(), true, 'no rollouts of that model: the task panels hide');
    assert.deepEqual(pageErrors, []);
    await page.close();
  });
});
