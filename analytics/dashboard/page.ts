/**
 * The dashboard page: static HTML and a small script that polls /api/overview and draws
 * Chart.js charts (served from node_modules by the service; no CDN). A run selector switches
 * between the live pipeline and the replays ClickHouse holds (`?tag=NAME`); a replay is shown
 * side by side with the live pipeline. The training panels show one model's run per version
 * (`?model=ID`; the most recently active by default): the learner's loss, reward, KL, clip
 * fraction, the rollout/trainer mismatch, samples, tokens and step time, and its rollouts' pass
 * rates by split and verdict part. The script exposes `window.turnstreamDashboard` (points per
 * chart, runs, the training model, last refresh, last error) for tests.
 */

export interface PageOptions {
  /** Refresh period in ms. */
  refreshMs: number;
  /** Where the gateway lives, for a link back (optional). */
  title: string;
}

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function dashboardPage(o: PageOptions): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(o.title)}</title>
<style>
  :root { --fg: #1d2330; --muted: #69728a; --bg: #f5f6fa; --card: #fff; --line: #e2e5ee; --accent: #3461d1; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  header { display: flex; align-items: baseline; gap: 16px; padding: 14px 24px; background: var(--card); border-bottom: 1px solid var(--line); }
  header h1 { margin: 0; font-size: 18px; }
  header .status { color: var(--muted); font-size: 12px; }
  header .status.error { color: #c0392b; }
  header label { color: var(--muted); font-size: 12px; }
  header select { font: inherit; font-size: 12px; }
  main { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 16px; padding: 16px 24px; }
  section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; min-width: 0; }
  section h2 { margin: 0 0 8px; font-size: 14px; font-weight: 600; }
  section.wide { grid-column: 1 / -1; }
  .chart { position: relative; height: 240px; }
  .kpis { display: flex; gap: 8px; flex-wrap: wrap; }
  .kpi { flex: 1 1 90px; border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; }
  .kpi b { display: block; font-size: 20px; }
  .kpi span { color: var(--muted); font-size: 12px; }
  table { width: 100%; border-collapse: collapse; font-size: 12px; }
  th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid var(--line); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 320px; }
  th { color: var(--muted); font-weight: 600; }
  th.n, td.n { text-align: right; font-variant-numeric: tabular-nums; }
  .empty { color: var(--muted); font-style: italic; }
</style>
</head>
<body>
<header><h1>${esc(o.title)}</h1><label>run <select id="run"><option value="">live</option></select></label><span class="status" id="status">loading…</span></header>
<main>
  <section class="wide"><h2>Funnel</h2><div class="kpis" id="kpis"></div></section>
  <section class="wide" id="compare-section" hidden><h2>This replay next to the live pipeline</h2><div id="compare"></div></section>
  <section><h2>Learning curve — mean judge score per policy version</h2><div class="chart"><canvas id="chart-learning"></canvas></div></section>
  <section><h2>Reward over time</h2><div class="chart"><canvas id="chart-time"></canvas></div></section>
  <section><h2>Funnel</h2><div class="chart"><canvas id="chart-funnel"></canvas></div></section>
  <section><h2>Judges — agreement with the majority and vote failures</h2><div class="chart"><canvas id="chart-judges"></canvas></div></section>
  <section><h2>Latency percentiles (ms)</h2><div class="chart"><canvas id="chart-latency"></canvas></div></section>
  <section><h2>Dead letters by reason</h2><div id="dlq"></div></section>
  <section class="wide" id="eval-section" hidden><h2>Simulated users — held-out satisfaction per version (last <code>turnstream eval</code>)</h2><p id="eval-summary"></p><div class="chart"><canvas id="chart-eval"></canvas></div></section>
  <section class="wide" id="training-section" hidden><h2>Training run — per version of <select id="train-model"></select></h2><p id="training-summary"></p></section>
  <section class="train-weights" hidden><h2>Loss, KL to the base policy, clip fraction</h2><div class="chart"><canvas id="chart-train-loss"></canvas></div></section>
  <section class="train-weights" hidden><h2>Mean reward of the step's samples</h2><div class="chart"><canvas id="chart-train-reward"></canvas></div></section>
  <section class="train-weights" hidden><h2>Rollout engine vs trainer — mean |Δ log-prob|, k3 KL, importance weights</h2><div class="chart"><canvas id="chart-train-mismatch"></canvas></div></section>
  <section class="train-weights" hidden><h2>Samples and tokens per version</h2><div class="chart"><canvas id="chart-train-volume"></canvas></div></section>
  <section class="train-weights" hidden><h2>Step time (s)</h2><div class="chart"><canvas id="chart-train-step"></canvas></div></section>
  <section class="train-tasks" hidden><h2>Tasks — verifier pass rate by split</h2><div class="chart"><canvas id="chart-train-splits"></canvas></div></section>
  <section class="train-tasks" hidden><h2>Tasks — pass rate of each verdict part, by split</h2><div class="chart"><canvas id="chart-train-parts"></canvas></div></section>
  <section class="wide train-tasks" hidden><h2>Tasks — pass rates by version and split, with the verdict's parts</h2><div id="train-pass"></div></section>
  <section class="wide" id="gym-section" hidden><h2>Tasks (<code>turnstream gym</code>) — verifier pass rate per policy version, held-out</h2><div class="chart"><canvas id="chart-gym"></canvas></div></section>
  <section class="wide"><h2>Users</h2><div id="users"></div></section>
  <section class="wide"><h2>Recent sessions</h2><div id="sessions"></div></section>
</main>
<script src="assets/chart.umd.min.js"></script>
<script>
(() => {
  const REFRESH_MS = ${Math.max(500, Math.floor(o.refreshMs))};
  const state = { charts: {}, points: {}, refreshes: 0, updatedAt: null, error: null, runs: [], tag: '' };
  const TAG = new URLSearchParams(location.search).get('tag') || '';
  // Imported history is a source of its own (never in the live figures): ?source=imported.
  const SOURCE = !TAG && new URLSearchParams(location.search).get('source') === 'imported' ? 'imported' : 'live';
  state.tag = TAG;
  state.source = SOURCE;
  state.imported = null;
  // The training panels' model (?model=; the API picks the most recently active one without it).
  const MODEL = new URLSearchParams(location.search).get('model') || '';
  state.training = null;
  const scoped = (path) => path + (TAG ? '?tag=' + encodeURIComponent(TAG) : SOURCE === 'imported' ? '?source=imported' : '');
  document.getElementById('run').addEventListener('change', (e) => {
    const v = e.target.value;
    location.search = v === '@imported' ? '?source=imported' : v ? '?tag=' + encodeURIComponent(v) : '';
  });
  document.getElementById('train-model').addEventListener('change', (e) => {
    const params = new URLSearchParams(location.search);
    params.set('model', e.target.value);
    location.search = '?' + params.toString();
  });
  window.turnstreamDashboard = state;
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 11;
  const COLORS = ['#3461d1', '#e07b39', '#2e9d6a', '#b03a8c', '#7d62c9', '#c0392b'];

  const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
  const fmt = (v, d = 3) => (v === null || v === undefined ? '—' : typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : esc(v));
  const time = (ms) => (ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '—');

  function draw(id, config) {
    const points = config.data.datasets.reduce((n, ds) => n + ds.data.filter((v) => v !== null && v !== undefined).length, 0);
    state.points[id] = points;
    const existing = state.charts[id];
    if (existing) {
      existing.data = config.data;
      existing.update('none');
    } else {
      state.charts[id] = new Chart(document.getElementById('chart-' + id), config);
    }
  }

  function table(el, rows, cols) {
    const host = document.getElementById(el);
    if (!rows.length) { host.innerHTML = '<p class="empty">nothing yet</p>'; return; }
    // Numeric columns (by the first row) are right-aligned, header included.
    const numeric = cols.map((c) => typeof c[1](rows[0]) === 'number');
    host.innerHTML = '<table><thead><tr>' + cols.map((c, i) => '<th' + (numeric[i] ? ' class="n"' : '') + '>' + esc(c[0]) + '</th>').join('') + '</tr></thead><tbody>' +
      rows.map((r) => '<tr>' + cols.map((c) => { const v = c[1](r); return '<td' + (typeof v === 'number' ? ' class="n"' : '') + '>' + fmt(v) + '</td>'; }).join('') + '</tr>').join('') +
      '</tbody></table>';
  }

  function render(o) {
    const f = o.funnel;
    const stages = [['turns', f.turns], ['main', f.main], ['pairs', f.pairs], ['judged', f.judged], ['samples', f.samples], ['trained', f.trained]];
    document.getElementById('kpis').innerHTML = stages.map(([k, v]) => '<div class="kpi"><b>' + v + '</b><span>' + k + '</span></div>').join('');

    const rv = o.reward_by_version;
    draw('learning', {
      type: 'line',
      data: {
        labels: rv.map((v) => 'v' + v.policy_version),
        datasets: [
          { label: 'mean judge score', data: rv.map((v) => v.mean_score), borderColor: COLORS[0], backgroundColor: COLORS[0], tension: 0.2, spanGaps: true },
          { label: 'mean sample reward', data: rv.map((v) => v.mean_reward), borderColor: COLORS[1], backgroundColor: COLORS[1], borderDash: [4, 3], tension: 0.2, spanGaps: true },
          { label: 'trainer mean reward at publish', data: rv.map((v) => v.trainer_mean_reward), borderColor: COLORS[4], backgroundColor: COLORS[4], showLine: false, pointStyle: 'rectRot', pointRadius: 5 },
        ],
      },
      options: { scales: { y: { suggestedMin: -1, suggestedMax: 1 } } },
    });

    const rt = o.reward_over_time;
    draw('time', {
      type: 'line',
      data: {
        labels: rt.map((p) => time(p.t).slice(11, 16)),
        datasets: [{ label: 'mean judge score', data: rt.map((p) => p.mean_score), borderColor: COLORS[2], backgroundColor: COLORS[2], tension: 0.2, spanGaps: true }],
      },
      options: { scales: { y: { suggestedMin: -1, suggestedMax: 1 } } },
    });

    draw('funnel', {
      type: 'bar',
      data: { labels: stages.map((s) => s[0]), datasets: [{ label: 'events', data: stages.map((s) => s[1]), backgroundColor: COLORS[0] }] },
      options: { plugins: { legend: { display: false } } },
    });

    draw('judges', {
      type: 'bar',
      data: {
        labels: o.judges.map((j) => j.judge_id),
        datasets: [
          { label: 'agreement', data: o.judges.map((j) => j.agreement), backgroundColor: COLORS[2] },
          { label: 'vote failure rate', data: o.judges.map((j) => j.failure_rate), backgroundColor: COLORS[5] },
        ],
      },
      options: { scales: { y: { min: 0, max: 1 } } },
    });

    draw('latency', {
      type: 'bar',
      data: {
        labels: o.latency.map((l) => l.turn_type),
        datasets: [
          { label: 'p50', data: o.latency.map((l) => l.p50), backgroundColor: COLORS[0] },
          { label: 'p90', data: o.latency.map((l) => l.p90), backgroundColor: COLORS[1] },
          { label: 'p99', data: o.latency.map((l) => l.p99), backgroundColor: COLORS[5] },
        ],
      },
    });

    table('dlq', o.dlq, [['stage', (d) => d.stage], ['code', (d) => d.code], ['count', (d) => d.count], ['last', (d) => time(d.last_failed_at_ms)], ['message', (d) => d.last_message]]);
    table('users', o.users, [
      ['user', (u) => u.user_id || '(anonymous)'], ['sessions', (u) => u.sessions], ['turns', (u) => u.turns], ['main', (u) => u.main],
      ['tokens', (u) => u.tokens], ['judged', (u) => u.judged], ['mean score', (u) => u.mean_score], ['thumbs up', (u) => u.thumbs_up], ['thumbs down', (u) => u.thumbs_down], ['last seen', (u) => time(u.last_ms)],
    ]);
    table('sessions', o.sessions, [
      ['session', (s) => s.session_id], ['user', (s) => s.user_id || '(anonymous)'], ['turns', (s) => s.turns], ['main', (s) => s.main],
      ['pairs', (s) => s.pairs], ['judged', (s) => s.judged], ['mean score', (s) => s.mean_score], ['done', (s) => (s.done ? 'yes' : '')], ['last', (s) => time(s.last_ms)],
    ]);
  }

  function renderEval(e) {
    if (!e || !e.available) return;
    document.getElementById('eval-section').hidden = false;
    document.getElementById('eval-summary').textContent =
      fmt(e.before) + ' → ' + fmt(e.after) + ' over ' + Object.keys(e.per_persona).length + ' personas × ' + e.seeds + ' seeds, ' + e.interactions +
      ' interactions each (' + e.method + ', ' + e.mode + '), p = ' + fmt(e.p_value) + ', ' + Math.round(e.wall_s) + ' s, finished ' + time(e.finished_at);
    const names = Object.keys(e.per_persona);
    draw('eval', {
      type: 'line',
      data: {
        labels: e.per_version.map((v) => String(v.interactions)),
        datasets: [
          { label: 'mean', data: e.per_version.map((v) => v.satisfaction), borderColor: '#000', backgroundColor: '#000', borderWidth: 3, tension: 0.2 },
          ...names.map((n, i) => ({ label: n, data: e.per_version.map((v) => v.byPersona[n] ?? null), borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length], borderWidth: 1, tension: 0.2, spanGaps: true })),
        ],
      },
      options: { scales: { y: { min: 0, max: 1 }, x: { title: { display: true, text: 'interactions' } } } },
    });
  }
  function renderGym(rows) {
    const held = (rows || []).filter((r) => (r.split === 'EVAL' || r.split === 'TEST') && r.pass_rate !== null);
    if (held.length === 0) return;
    document.getElementById('gym-section').hidden = false;
    const models = [...new Set(held.map((r) => r.policy_model_id))];
    const versions = [...new Set(held.map((r) => r.policy_version))].sort((a, b) => a - b);
    draw('gym', {
      type: 'line',
      data: {
        labels: versions.map(String),
        datasets: models.map((m, i) => ({
          label: m,
          data: versions.map((v) => { const r = held.find((x) => x.policy_model_id === m && x.policy_version === v); return r ? r.pass_rate : null; }),
          borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length], borderWidth: 2, tension: 0.2, spanGaps: true,
        })),
      },
      options: { scales: { y: { min: 0, max: 1 }, x: { title: { display: true, text: 'policy version' } } } },
    });
  }
  const showAll = (selector, on) => document.querySelectorAll(selector).forEach((el) => { el.hidden = !on; });
  const line = (label, data, color, extra = {}) => ({ label, data, borderColor: color, backgroundColor: color, tension: 0.2, spanGaps: true, ...extra });
  const right = (title) => ({ position: 'right', title: { display: true, text: title }, grid: { drawOnChartArea: false } });
  const left = (title, extra = {}) => ({ position: 'left', title: { display: true, text: title }, ...extra });
  function renderTraining(t) {
    state.training = { model: t.model, models: t.models.map((m) => m.model_id), versions: t.versions.length, pass_rates: t.pass_rates.length };
    if (!t.model) return;
    document.getElementById('training-section').hidden = false;
    const select = document.getElementById('train-model');
    const options = t.models.map((m) => '<option value="' + esc(m.model_id) + '"' + (m.model_id === t.model ? ' selected' : '') + '>' + esc(m.model_id) +
      ' (' + m.versions + ' versions, ' + m.rollouts + ' rollouts)</option>').join('');
    if (select.innerHTML !== options) select.innerHTML = options;
    const v = t.versions;
    const sum = (k) => v.reduce((n, x) => n + (x[k] || 0), 0);
    const timed = v.filter((x) => x.step_seconds > 0);
    document.getElementById('training-summary').textContent = v.length
      ? v.length + (v.length === 1 ? ' version' : ' versions') + ' published, the last v' + v[v.length - 1].version + ' at ' + time(v[v.length - 1].published_at_ms) + '; ' +
        sum('samples') + ' samples, ' + sum('tokens') + ' tokens' +
        (timed.length ? '; mean step ' + (timed.reduce((n, x) => n + x.step_seconds, 0) / timed.length).toFixed(1) + ' s' : '')
      : 'no version published yet';
    showAll('.train-weights', v.length > 0);
    if (v.length) {
      const labels = v.map((x) => 'v' + x.version);
      const col = (k) => v.map((x) => x[k]);
      draw('train-loss', {
        type: 'line',
        data: { labels, datasets: [
          line('loss', col('loss'), COLORS[0], { yAxisID: 'y' }),
          line('KL to the base', col('kl'), COLORS[1], { yAxisID: 'y1' }),
          line('clip fraction', col('clip_fraction'), COLORS[3], { yAxisID: 'y1', borderDash: [4, 3] }),
        ] },
        options: { scales: { y: left('loss'), y1: right('KL, clip fraction') } },
      });
      draw('train-reward', {
        type: 'line',
        data: { labels, datasets: [line('mean reward', col('mean_reward'), COLORS[2])] },
        options: { scales: { y: { suggestedMin: -1, suggestedMax: 1 } } },
      });
      draw('train-mismatch', {
        type: 'line',
        data: { labels, datasets: [
          line('mean |Δ log-prob|', col('logprob_drift'), COLORS[0], { yAxisID: 'y' }),
          line('k3 KL', col('mismatch_kl'), COLORS[4], { yAxisID: 'y' }),
          line('share of tokens at the IS cap', col('tis_truncated'), COLORS[5], { yAxisID: 'y1', borderDash: [4, 3] }),
          line('mean importance weight', col('tis_mean'), COLORS[1], { yAxisID: 'y1', borderDash: [2, 2] }),
        ] },
        options: { scales: { y: left('log-prob gap, KL', { beginAtZero: true }), y1: right('share, weight') } },
      });
      draw('train-volume', {
        type: 'bar',
        data: { labels, datasets: [
          { label: 'samples', data: col('samples'), backgroundColor: COLORS[0], yAxisID: 'y' },
          { label: 'tokens', data: col('tokens'), backgroundColor: COLORS[1], yAxisID: 'y1' },
        ] },
        options: { scales: { y: left('samples', { beginAtZero: true }), y1: { ...right('tokens'), beginAtZero: true } } },
      });
      draw('train-step', {
        type: 'bar',
        // 0 = not reported (versions from before step times were kept).
        data: { labels, datasets: [{ label: 'step time (s)', data: v.map((x) => (x.step_seconds > 0 ? x.step_seconds : null)), backgroundColor: COLORS[2] }] },
        options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true } } },
      });
    }
    const pr = t.pass_rates;
    showAll('.train-tasks', pr.length > 0);
    if (!pr.length) return;
    const versions = [...new Set(pr.map((r) => r.policy_version))].sort((a, b) => a - b);
    const splits = [...new Set(pr.map((r) => r.split))];
    const at = (version, split) => pr.find((r) => r.policy_version === version && r.split === split);
    draw('train-splits', {
      type: 'line',
      data: { labels: versions.map((x) => 'v' + x), datasets: splits.map((sp, i) =>
        line(sp + (sp === 'EVAL' ? ' (held out, older runs)' : ''), versions.map((x) => at(x, sp)?.pass_rate ?? null), COLORS[i % COLORS.length], { borderDash: sp === 'TRAIN' ? [4, 3] : undefined })) },
      options: { scales: { y: { min: 0, max: 1 }, x: { title: { display: true, text: 'policy version' } } } },
    });
    const parts = [...new Set(pr.flatMap((r) => Object.keys(r.parts)))].sort();
    const partSets = splits.flatMap((sp) => parts.filter((p) => pr.some((r) => r.split === sp && p in r.parts)).map((p) => [p, sp]));
    draw('train-parts', {
      type: 'line',
      data: { labels: versions.map((x) => 'v' + x), datasets: partSets.map(([p, sp], i) =>
        line(p + ' · ' + sp, versions.map((x) => at(x, sp)?.parts[p] ?? null), COLORS[i % COLORS.length], { borderDash: sp === 'TRAIN' ? [4, 3] : undefined })) },
      options: { scales: { y: { min: 0, max: 1 }, x: { title: { display: true, text: 'policy version' } } } },
    });
    table('train-pass', pr, [
      ['version', (r) => r.policy_version], ['split', (r) => r.split], ['rollouts', (r) => r.rollouts], ['pass rate', (r) => r.pass_rate],
      ['mean reward', (r) => r.mean_reward], ...parts.map((p) => [p, (r) => (p in r.parts ? r.parts[p] : null)]),
    ]);
  }
  async function getJson(path) {
    const res = await fetch(path, { cache: 'no-store' });
    const body = await res.json();
    if (!res.ok) throw new Error(body && body.error ? body.error.message : 'HTTP ' + res.status);
    return body;
  }

  function renderRuns(runs) {
    state.runs = runs.map((r) => r.tag);
    if (TAG && !state.runs.includes(TAG)) runs = [...runs, { tag: TAG, pairs: 0 }];
    const select = document.getElementById('run');
    let html = runs.map((r) => '<option value="' + esc(r.tag) + '"' + (r.tag === TAG && SOURCE === 'live' ? ' selected' : '') + '>' + (r.tag ? 'replay ' + esc(r.tag) : 'live') + ' (' + r.pairs + ' pairs)</option>').join('');
    if (SOURCE === 'imported' || state.imported) html += '<option value="@imported"' + (SOURCE === 'imported' ? ' selected' : '') + '>imported history' + (state.imported ? ' (' + state.imported.turns + ' turns)' : '') + '</option>';
    if (select.innerHTML !== html) select.innerHTML = html;
  }

  function renderCompare(c) {
    document.getElementById('compare-section').hidden = false;
    const rows = [
      ['pairs', c.a.pairs, c.b.pairs], ['judged turns', c.a.judged, c.b.judged], ['samples', c.a.samples, c.b.samples],
      ['score +1', c.a.positive, c.b.positive], ['score 0', c.a.neutral, c.b.neutral], ['score −1', c.a.negative, c.b.negative],
      ['mean score', c.a.mean_score, c.b.mean_score], ['mean reward', c.a.mean_reward, c.b.mean_reward],
      ['judges', c.a.judge_ids.join(', '), c.b.judge_ids.join(', ')],
    ];
    table('compare', rows, [['', (r) => r[0]], ['live', (r) => r[1]], ['replay ' + TAG, (r) => r[2]]]);
    const note = document.createElement('p');
    note.id = 'agreement';
    note.textContent = 'judged in both: ' + c.both_judged + ', same score: ' + c.same_score + (c.agreement === null ? '' : ' (agreement ' + fmt(c.agreement) + ')');
    document.getElementById('compare').appendChild(note);
  }

  async function refresh() {
    const status = document.getElementById('status');
    try {
      const [body, runs, compared, evaluation, gym, training] = await Promise.all([
        getJson(scoped('api/overview')),
        getJson('api/runs'),
        TAG ? getJson('api/compare?a=&b=' + encodeURIComponent(TAG)) : Promise.resolve(null),
        getJson('api/eval'),
        getJson('api/pass-rate-by-version'),
        getJson('api/training' + (MODEL ? '?model=' + encodeURIComponent(MODEL) : '')),
      ]);
      renderEval(evaluation);
      renderGym(gym);
      renderTraining(training);
      state.imported = body.imported || null;
      renderRuns(runs);
      if (compared) renderCompare(compared);
      render(body);
      state.refreshes++;
      state.updatedAt = Date.now();
      state.error = null;
      status.className = 'status';
      status.textContent = 'updated ' + new Date().toLocaleTimeString() + ' · refreshes every ' + REFRESH_MS / 1000 + ' s';
    } catch (err) {
      state.error = String(err && err.message ? err.message : err);
      status.className = 'status error';
      status.textContent = 'refresh failed: ' + state.error;
    } finally {
      setTimeout(refresh, REFRESH_MS);
    }
  }
  refresh();
})();
</script>
</body>
</html>
`;
}
