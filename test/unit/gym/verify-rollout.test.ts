/** The answer verifier: the persona check language on the final assistant message, and why it failed. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Task } from '../../../gym/tasks/task.ts';
import { explainCheck, verifyRollout } from '../../../gym/verify/verify-rollout.ts';

describe('verifyRollout with an answer check', () => {
  const task: Pick<Task, 'verify'> = { verify: { answer: { all: [{ regex_present: { regex: '\\b42\\b' } }, { max_words: 8 }] } } };

  it('passes (reward 1) when the final answer satisfies the check', async () => {
    assert.deepEqual(await verifyRollout(task, { finalAnswer: '  The answer is 42.  ' }), {
      passed: true,
      reward: 1,
      score: 1,
      kind: 'answer',
      parts: { answer: true },
      detail: 'the final answer passes the check',
    });
  });

  it('fails (reward 0) naming the part of the check that failed', async () => {
    const long = await verifyRollout(task, { finalAnswer: 'The answer, after a long and careful thought, is 42.' });
    assert.equal(long.passed, false);
    assert.equal(long.reward, 0);
    assert.equal(long.detail, 'verify.answer.all[1] failed: {"max_words":8}');
    const wrong = await verifyRollout(task, { finalAnswer: 'It is 41.' });
    assert.equal(wrong.detail, 'verify.answer.all[0] failed: {"regex_present":{"regex":"\\\\b42\\\\b"}}');
  });

  it('no final answer, or an empty one, fails', async () => {
    assert.deepEqual(await verifyRollout(task, { finalAnswer: null }), {
      passed: false,
      reward: 0,
      score: 0,
      kind: 'answer',
      parts: { answer: false },
      detail: 'no final answer',
    });
    assert.equal((await verifyRollout(task, { finalAnswer: '  \n' })).detail, 'the final answer is empty');
  });

  it('a verdict of named parts: each reported, the reward needs them all, the detail names each', async () => {
    const parted: Pick<Task, 'verify'> = {
      verify: { parts: { content: { answer: { regex_present: '\\b42\\b' } }, format: { answer: { regex_present: '^\\d+$' } } } },
    };
    const exact = await verifyRollout(parted, { finalAnswer: '42' });
    assert.deepEqual([exact.passed, exact.reward, exact.kind, exact.parts], [true, 1, 'parts', { content: true, format: true }]);
    const sentence = await verifyRollout(parted, { finalAnswer: 'The answer is 42.' });
    assert.deepEqual([sentence.passed, sentence.reward, sentence.parts], [false, 0, { content: true, format: false }]);
    assert.equal(
      sentence.detail,
      'content: passed; the final answer passes the check\nformat: failed; verify.parts.format.answer failed: {"regex_present":"^\\\\d+$"}',
    );
    const none = await verifyRollout(parted, { finalAnswer: null });
    assert.deepEqual(none.parts, { content: false, format: false });
    assert.deepEqual([exact.score, sentence.score, none.score], [1, 0.5, 0], 'partial credit: the share of parts that held');
  });

  it('partial credit of a conjunction: the share of its checks that hold; anything else that fails scores 0', async () => {
    // task: the right number (all[0]) in at most 8 words (all[1])
    assert.equal((await verifyRollout(task, { finalAnswer: 'The answer, after a long and careful thought, is 42.' })).score, 0.5);
    assert.equal((await verifyRollout(task, { finalAnswer: 'It is 41.' })).score, 0.5);
    assert.equal((await verifyRollout(task, { finalAnswer: 'It is 41 and that is all I can say, I am afraid.' })).score, 0);
    assert.equal((await verifyRollout(task, { finalAnswer: null })).score, 0);
    const single: Pick<Task, 'verify'> = { verify: { answer: { regex_present: '42' } } };
    assert.equal((await verifyRollout(single, { finalAnswer: 'no' })).score, 0);
  });

  it('a command task without a sandbox is a caller’s mistake', async () => {
    await assert.rejects(verifyRollout({ verify: { command: 'true' } }, { finalAnswer: 'x' }), { code: 'TS_ERR_INVALID_INPUT' });
  });
});

describe('explainCheck', () => {
  it('walks all, any and not to the failing part', () => {
    assert.equal(explainCheck({ max_words: 3 }, 'one two'), null);
    assert.equal(
      explainCheck({ any: [{ starts_with: 'Yes' }, { starts_with: 'No' }] }, 'Maybe'),
      'verify.answer.any: none of its 2 checks passed',
    );
    assert.equal(explainCheck({ not: { regex_present: 'sorry' } }, 'sorry!'), 'verify.answer failed: {"not":{"regex_present":"sorry"}}');
    assert.equal(
      explainCheck({ all: [{ min_words: 1 }, { all: [{ ends_with: '.' }, { ends_with: '!' }] }] }, 'hi.'),
      'verify.answer.all[1].all[1] failed: {"ends_with":"!"}',
    );
  });
});
