import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import { chromium, type BrowserContext } from 'playwright-core';
import { AnalyticsStore, buildDashboardApp, funnel, listRuns, startDashboard, type DashboardHandle } from '../../analytics/index.ts';
import { learningDataset } from '../../bench/sink-dataset.ts';
import { startClickhouseSink, type ClickhouseSinkHandle } from '../../processors/clickhouse-sink/index.ts';
import { createKafka, ensureTopics, EventProducer } from '../../streams/index.ts';
import { dropTables, family, waitFor, type Family } from '../integration/analytics/support.ts';
import { ensureStack, uniquePrefix } from '../support/stack.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

interface PageState {
  points: Record<string, number>;
  refreshes: number;
  error: string | null;
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
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 1500 },
    });
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
    const ink = (await page.evaluate(`[...document.querySelectorAll('canvas')].map((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let painted = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) painted++;
      return { id: c.id, painted, total: d.length / 4 };
    })`)) as Array<{ id: string; painted: number; total: number }>;
    assert.equal(ink.length, 7);
    // No gym run in this data: the tasks panel stays hidden and its chart undrawn.
    assert.equal(await page.locator('#gym-section').isHidden(), true);
    assert.equal(ink.find((c) => c.id === 'chart-gym')?.painted, 0);
    for (const c of ink.filter((c) => c.id !== 'chart-gym'))
      assert.ok(c.painted > c.total * 0.005, `${c.id} is drawn (${c.painted} of ${c.total} pixels)`);

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
});
