import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toRow, type Row } from '../../../warehouse/index.ts';
import {
  exampleDeadLetter,
  exampleFeedback,
  exampleJudgement,
  examplePair,
  exampleSample,
  exampleTurn,
  exampleWeightVersion,
} from '../../support/fixtures.ts';

const at = { topic: 'turnstream.x.v1', partition: 2, offset: '41' };

describe('events → analytics rows', () => {
  it('keys every row by the event id, so a re-delivery replaces itself', () => {
    const ids: Array<[Row, string, string]> = [
      [toRow('turns', exampleTurn(), at).row, 'turn_id', '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10'],
      [toRow('feedback', exampleFeedback(), at).row, 'feedback_id', 'fb-1'],
      [toRow('pairs', examplePair(), at).row, 'pair_id', '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10'],
      [toRow('judgements', exampleJudgement(), at).row, 'judgement_id', '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10:embedded'],
      [toRow('samples', exampleSample(), at).row, 'sample_id', '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10:COMBINED'],
      [toRow('weights', exampleWeightVersion(), at).row, 'weight_id', 'turnstream-tiny:1'],
      [toRow('dlq', exampleDeadLetter(), at).row, 'dlq_id', 'session-assembler|turnstream.turns.v1|0|42'],
    ];
    for (const [row, key, want] of ids) {
      assert.equal(row[key], want);
      assert.equal(row._topic, at.topic);
      assert.equal(row._offset, 41);
    }
  });

  it("tags the rows a replay re-derives with the topic's replay tag (part of their key), not the others", () => {
    const tagged = { ...at, replayTag: 'judge-b' };
    for (const id of ['pairs', 'judgements', 'samples', 'dlq'] as const) {
      const ev = { pairs: examplePair, judgements: exampleJudgement, samples: exampleSample, dlq: exampleDeadLetter }[id]();
      assert.equal(toRow(id, ev, tagged).row.replay_tag, 'judge-b', id);
      assert.equal(toRow(id, ev, at).row.replay_tag, '', `${id} read from a live topic`);
    }
    assert.equal('replay_tag' in toRow('turns', exampleTurn(), tagged).row, false, 'turns are shared, never replayed');
  });

  it('flattens what the analytics need', () => {
    const t = toRow('turns', exampleTurn({ userId: null, latencyMs: 250 }), at);
    assert.equal(t.table, 'turns');
    assert.equal(t.row.user_id, '', 'anonymous turns are user ""');
    assert.equal(t.row.turn_type, 'MAIN');
    assert.equal(t.row.latency_ms, 250);
    assert.equal(t.row.total_tokens, 7);
    assert.equal(JSON.parse(String(t.row.event)).turnId, exampleTurn().turnId, 'the full event is kept');

    const j = toRow('judgements', exampleJudgement(), at).row;
    // Two votes: +1 (agrees with the majority +1) and a timed-out one.
    assert.deepEqual([j.votes, j.votes_valid, j.votes_failed, j.votes_agree, j.score], [2, 1, 1, 1, 1]);
    assert.equal(j.vote_latency_ms_max, 5000);

    const s = toRow('samples', exampleSample(), at).row;
    assert.deepEqual([s.method, s.reward, s.trained_tokens, s.has_teacher, s.tag], ['COMBINED', 1, 3, 1, '']);

    const d = toRow('dlq', exampleDeadLetter(), at).row;
    assert.deepEqual(
      [d.code, d.stage, d.key, d.value_bytes, d.value_base64],
      ['TS_ERR_DECODE', 'session-assembler', 'session-1', 3, 'AAEC'],
    );

    const f = toRow('feedback', exampleFeedback({ rating: null }), at).row;
    assert.deepEqual([f.has_rating, f.rating], [0, 0]);
  });

  it('refuses events it cannot store, with the field named (the sink dead-letters them)', () => {
    assert.throws(
      () => toRow('turns', exampleTurn({ turnId: '' }), at),
      (e: Error & { code?: string; param?: string }) => e.code === 'TS_ERR_INVALID_INPUT' && e.param === 'turnId',
    );
    assert.throws(() => toRow('samples', exampleSample({ reward: Number.NaN }), at), /reward must be finite/);
    assert.throws(() => toRow('sessionState', {}, at), /not stored/);
  });
});
