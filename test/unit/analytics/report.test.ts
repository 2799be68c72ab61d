import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatComparison, formatReport, type Overview, type RunStats } from '../../../analytics/index.ts';
import { sqlString } from '../../../warehouse/index.ts';

const overview: Overview = {
  generated_at_ms: 0,
  source: 'live',
  imported: null,
  funnel: { turns: 100, main: 80, pairs: 80, judged: 60, samples: 50, trained: 20, trained_reported: 32 },
  reward_by_version: [
    {
      policy_version: 0,
      judged: 30,
      mean_score: -0.5,
      positive_share: 0.2,
      samples: 25,
      mean_reward: -0.5,
      trainer_mean_reward: null,
      trainer_loss: null,
      published_at_ms: null,
    },
    {
      policy_version: 1,
      judged: 30,
      mean_score: 0.5,
      positive_share: 0.7,
      samples: 25,
      mean_reward: 0.5,
      trainer_mean_reward: -0.5,
      trainer_loss: 0.4,
      published_at_ms: 1,
    },
  ],
  reward_over_time: [],
  judges: [],
  latency: [],
  users: [],
  sessions: [],
  dlq: [
    {
      stage: 'judge',
      code: 'TS_ERR_JUDGE_FAILED',
      count: 3,
      topics: ['turnstream.pairs.v1'],
      last_failed_at_ms: 1,
      last_message: 'all votes failed',
    },
  ],
};

describe('turnstream report (terminal)', () => {
  it('shows every funnel stage with its share and a bar, and the learning curve per version', () => {
    const text = formatReport(overview, 40);
    const line = (name: string): string => text.split('\n').find((l) => l.trim().startsWith(name)) ?? '';
    assert.match(line('turns'), /100 100\.0%  █{40}$/);
    assert.match(line('trained'), /20  20\.0%  █{8}$/);
    assert.match(text, /trainer reports 32 samples/);
    // v0 at -0.5 fills a quarter of the 20-cell scale, v1 at +0.5 three quarters.
    assert.match(line('v0'), /-0\.500 .* █{5}$/);
    assert.match(line('v1'), /0\.500 .* █{15}$/);
    assert.match(text, /judge\s+TS_ERR_JUDGE_FAILED\s+3/);
  });
});

describe('turnstream report --tag / comparison (terminal)', () => {
  it('shows imported history under its own source, never in the live figures', () => {
    assert.doesNotMatch(formatReport(overview), /imported/);
    const imported = { turns: 43, main: 43, pairs: 43, judged: 43, samples: 0, trained: 0, trained_reported: 0 };
    const live = formatReport({ ...overview, imported });
    assert.match(
      live,
      /imported history, not in these figures: 43 turns, 43 main, 43 pairs, 43 judged, 0 samples \(report --source imported\)/,
    );
    assert.match(formatReport({ ...overview, source: 'imported', funnel: imported }).split('\n')[0], /^Imported history/);
  });

  it('names the replay a report is about', () => {
    assert.doesNotMatch(formatReport(overview), /Replay/);
    assert.match(formatReport({ ...overview, tag: 'judge-b' }).split('\n')[0], /^Replay "judge-b"/);
  });

  it('puts two runs side by side: counts, score distribution, agreement', () => {
    const run = (tag: string, pos: number, neg: number): RunStats => ({
      tag,
      pairs: 10,
      judgements: pos + neg,
      judged: pos + neg,
      samples: pos + neg,
      positive: pos,
      neutral: 0,
      negative: neg,
      mean_score: (pos - neg) / (pos + neg),
      mean_reward: null,
      judge_ids: [tag === '' ? 'embedded' : 'llm'],
    });
    const text = formatComparison({ a: run('', 6, 4), b: run('judge-b', 3, 7), both_judged: 10, same_score: 7, agreement: 0.7 });
    const line = (name: string): string => text.split('\n').find((l) => l.trim().startsWith(name)) ?? '';
    assert.match(text.split('\n')[0], /live vs judge-b/);
    assert.match(line('pairs'), /^\s+pairs\s+10\s+10$/);
    assert.match(line('score +1'), /6 \(60\.0%\)\s+3 \(30\.0%\)$/);
    assert.match(line('score -1'), /4 \(40\.0%\)\s+7 \(70\.0%\)$/);
    assert.match(line('mean score'), /0\.200\s+-0\.400$/);
    assert.match(line('judges'), /embedded\s+llm$/);
    assert.match(text, /judged in both: 10, same score: 7 \(agreement 0\.700\)/);
  });
});

describe('SQL literals (ClickHouse 18.16 has no query parameters)', () => {
  it('escapes quotes and backslashes so a value never ends the string', () => {
    assert.equal(sqlString("o'brien\\"), "'o\\'brien\\\\'");
    assert.equal(sqlString('a\nb'), "'a\\nb'");
  });
});
