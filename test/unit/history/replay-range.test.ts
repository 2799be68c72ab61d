import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Admin } from 'kafkajs';
import { openPlan, parseBound, readPlan, writePlan, type ReplayPlan } from '../../../history/replay-range.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';

describe('openPlan', () => {
  const dir = suiteTempDir('replay-range-');
  const plan: ReplayPlan = {
    version: 1,
    prefix: '',
    tag: 't1',
    from: '2026-01-01T00:00:00Z',
    to: '7',
    createdAt: '2026-01-02T00:00:00.000Z',
    turns: { topic: 'turns', start: { 0: '0' }, end: { 0: '7' } },
    feedback: { topic: 'feedback', start: { 0: '0' }, end: { 0: '3' } },
  };
  // A resumed replay never asks the broker: an admin that throws proves it.
  const noAdmin = new Proxy({}, { get: () => () => Promise.reject(new Error('admin used')) }) as Admin;
  const topics = { prefix: '', tag: 't1', turnsTopic: 'turns', feedbackTopic: 'feedback' };

  it('resumes with the plan a tag already has when the range is the same', async () => {
    const file = join(dir(), 'same.json');
    writePlan(file, plan);
    const got = await openPlan(noAdmin, file, { ...topics, from: parseBound(plan.from), to: parseBound('7') });
    assert.equal(got.resumed, true);
    assert.deepEqual(got.plan, plan);
  });

  it('refuses another range under the same tag with an input error naming the first range', async () => {
    const file = join(dir(), 'other.json');
    writePlan(file, plan);
    await assert.rejects(
      openPlan(noAdmin, file, { ...topics, from: parseBound('2026-02-01T00:00:00Z') }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'TS_ERR_INVALID_INPUT');
        assert.match(err.message, /was started with --from 2026-01-01T00:00:00Z --to 7; run it with the same range/);
        return true;
      },
    );
    assert.deepEqual(readPlan(file), plan, 'the plan file is left as it was');
  });
});
