/**
 * measureBaseRates: n rollouts of every task (here against a scripted fake endpoint, in real
 * sandboxes), each task's pass rate, whether it is in the learnable band, the rates per split.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { measureBaseRates } from '../../../gym/base-rates.ts';
import { parseTaskSuite } from '../../../gym/tasks/parse-task-suite.ts';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.ts';

describe('measureBaseRates', { timeout: 120_000 }, () => {
  let fake: FakeOpenAI;
  before(async () => {
    fake = await startFakeOpenAI();
  });
  after(async () => {
    await fake?.close();
  });

  it('runs n rollouts per task and reports each task’s rate, its band and the rates per split', async () => {
    const tasks = parseTaskSuite(
      [
        { id: 'sometimes', instruction: 'Say yes.', tools: [], verify: { answer: { regex_present: 'yes' } }, split: 'train' },
        { id: 'never', instruction: 'Say no.', tools: [], verify: { answer: { regex_present: 'no' } }, split: 'train' },
        { id: 'always', instruction: 'Make a file.', verify: { command: 'test -f made' }, split: 'eval' },
      ]
        .map((t) => JSON.stringify(t))
        .join('\n'),
    );
    const n = 4;
    for (let k = 0; k < n; k++) {
      fake.script(`base-sometimes-${k}`, [{ content: k === 0 ? 'yes' : 'maybe' }]);
      fake.script(`base-never-${k}`, [{ content: 'maybe' }]);
      fake.script(`base-always-${k}`, [{ content: '```bash\ntouch made\n```' }, { content: 'Made.' }]);
    }
    const progress: number[] = [];
    const r = await measureBaseRates(tasks, {
      n,
      concurrency: 3,
      sessionPrefix: 'base',
      rollout: { baseURL: fake.url, model: 'fake', maxRetries: 0 },
      onRollout: (_, done, total) => {
        assert.equal(total, 12);
        progress.push(done);
      },
    });
    assert.deepEqual(
      progress,
      Array.from({ length: 12 }, (_, i) => i + 1),
    );
    const byId = Object.fromEntries(r.tasks.map((t) => [t.id, t]));
    assert.deepEqual([byId.sometimes.rate, byId.never.rate, byId.always.rate], [0.25, 0, 1]);
    assert.deepEqual([byId.sometimes.learnable, byId.never.learnable, byId.always.learnable], [true, false, false]);
    assert.equal(byId.always.meanSteps, 2);
    assert.deepEqual(byId.always.stoppedBy, { answer: 4, max_turns: 0, timeout: 0, error: 0 });
    assert.deepEqual(r.train, { tasks: 2, rate: 0.125, learnable: 1, parts: { answer: 0.125 } });
    assert.deepEqual(r.test, { tasks: 1, rate: 1, learnable: 0, parts: { command: 1 } });
    assert.equal(r.n, n);
    assert.equal(r.temperature, 0.7);
    // Each rollout its own session and group, tagged in the metadata.
    const [req] = fake.requests('base-never-2');
    assert.deepEqual(req.body.metadata, { gym_task: 'never', gym_group: 'base-never', gym_rollout: '2' });
  });

  it('--dev-only leaves the test split unseen: its tasks are not rolled out and test counts none', async () => {
    const tasks = parseTaskSuite(
      [
        { id: 'tr', instruction: 'Say yes.', tools: [], verify: { answer: { regex_present: 'yes' } }, split: 'train' },
        { id: 'dv', instruction: 'Say yes.', tools: [], verify: { answer: { regex_present: 'yes' } }, split: 'dev' },
        { id: 'te', instruction: 'Say yes.', tools: [], verify: { answer: { regex_present: 'yes' } }, split: 'test' },
      ]
        .map((t) => JSON.stringify(t))
        .join('\n'),
    );
    for (const id of ['tr', 'dv', 'te']) for (let k = 0; k < 2; k++) fake.script(`dev-only-${id}-${k}`, [{ content: 'yes' }]);
    const r = await measureBaseRates(tasks, {
      n: 2,
      devOnly: true,
      sessionPrefix: 'dev-only',
      rollout: { baseURL: fake.url, model: 'fake', maxRetries: 0 },
    });
    assert.deepEqual(
      r.tasks.map((t) => [t.id, t.split, t.rate]),
      [
        ['tr', 'train', 1],
        ['dv', 'dev', 1],
      ],
    );
    assert.equal(r.devOnly, true);
    assert.deepEqual(r.test, { tasks: 0, rate: 0, learnable: 0, parts: {} });
    // no model call was made for the test task
    assert.equal(fake.requests('dev-only-te-0').length, 0);
    assert.equal(fake.requests('dev-only-tr-1').length, 1);
  });

  it('an abort stops the measurement with TS_ERR_ABORTED', async () => {
    const tasks = parseTaskSuite(JSON.stringify({ id: 'slow', instruction: 'x', tools: [], verify: { answer: { min_words: 1 } } }));
    fake.script('abort-slow-0', [{ delayMs: 30_000 }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    await assert.rejects(
      measureBaseRates(tasks, {
        n: 2,
        sessionPrefix: 'abort',
        signal: ac.signal,
        rollout: { baseURL: fake.url, model: 'fake', maxRetries: 0 },
      }),
      { code: 'TS_ERR_ABORTED' },
    );
  });
});
