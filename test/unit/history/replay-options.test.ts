import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseBound, validateReplayConfig } from '../../../history/index.ts';

describe('replay bounds', () => {
  it('reads times, one offset for every partition, and per-partition offsets', () => {
    assert.deepEqual(parseBound('2026-02-14T20:00:00Z'), {
      kind: 'time',
      at: Date.parse('2026-02-14T20:00:00Z'),
      text: '2026-02-14T20:00:00Z',
    });
    assert.deepEqual(parseBound('42'), { kind: 'offset', all: 42, partitions: {}, text: '42' });
    assert.deepEqual(parseBound('0:10,3:7'), { kind: 'offset', partitions: { 0: 10, 3: 7 }, text: '0:10,3:7' });
    assert.throws(() => parseBound('last tuesday'), /neither a time \(ISO-8601\) nor an offset/);
  });
});

describe('replay config file', () => {
  it('accepts every documented setting', () => {
    const c = {
      judge: {
        baseUrl: null,
        model: 'm',
        mode: 'rl',
        votes: 3,
        hintVotes: 0,
        temperature: 0.6,
        maxTokens: 64,
        timeoutMs: 1000,
        retries: 0,
        id: 'j',
        judgeUntrainable: false,
      },
      session: { idleTimeoutMs: 1000, endPolicy: 'drop', feedbackGraceMs: 0 },
      samples: { method: 'combined', maskedEndSamples: false, topK: 5, teacher: { baseUrl: 'http://x/v1', model: 't' } },
      concurrency: 8,
    };
    assert.deepEqual(validateReplayConfig(c), c);
  });

  it('names every problem: unknown settings (typos) and wrong values', () => {
    assert.throws(
      () =>
        validateReplayConfig({ judge: { votes: 0, modle: 'x' }, samples: { method: 'ppo' }, session: { feedbackGraceMs: -1 }, extra: 1 }),
      (err: Error) =>
        /judge\.votes: expected an integer > 0, got 0/.test(err.message) &&
        /judge\.modle: unknown setting/.test(err.message) &&
        /samples\.method: expected one of rl, opd, combined, got "ppo"/.test(err.message) &&
        /session\.feedbackGraceMs: expected an integer >= 0, got -1/.test(err.message) &&
        /extra: unknown setting/.test(err.message),
    );
  });
});
