import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReplayTopics } from '../../../../processors/clickhouse-sink/replay-topics.ts';
import { SINK_TOPICS } from '../../../../processors/clickhouse-sink/index.ts';
import { topicName } from '../../../../schemas/index.ts';

describe('clickhouse sink: which replay topics it follows', () => {
  it("with 'all', every tag's pairs, judgements, samples and dead letters under the prefix, nothing else", () => {
    const r = new ReplayTopics('t-1.', SINK_TOPICS, 'all');
    for (const id of ['pairs', 'judgements', 'samples', 'dlq'] as const) {
      assert.deepEqual(r.match(topicName(id, { prefix: 't-1.', tag: 'judge-b_2' })), { id, tag: 'judge-b_2' });
      assert.ok(r.pattern.test(topicName(id, { prefix: 't-1.', tag: 'x' })));
    }
    const not = [
      topicName('pairs', { prefix: 't-1.' }), // live
      topicName('turns', { prefix: 't-1.', tag: 'x' }), // shared with the live pipeline
      topicName('sessionState', { prefix: 't-1.', tag: 'x' }), // not stored
      topicName('pairs', { prefix: 't-2.', tag: 'x' }), // another prefix
      topicName('pairs', { tag: 'x' }),
      `${topicName('pairs', { prefix: 't-1.', tag: 'x' })}.extra`,
      't-1.turnstream.replay.a.b.pairs.v1', // a tag has no dot
    ];
    for (const t of not) {
      assert.equal(r.match(t), undefined, t);
      assert.equal(r.pattern.test(t), false, t);
    }
  });

  it('with a list, only those tags; the prefix is taken literally, not as a pattern', () => {
    const r = new ReplayTopics('a.b', ['pairs', 'samples', 'turns'], ['x', 'y-1']);
    assert.deepEqual(r.match('a.bturnstream.replay.y-1.samples.v1'), { id: 'samples', tag: 'y-1' });
    assert.equal(r.match('a.bturnstream.replay.z.samples.v1'), undefined);
    assert.equal(r.match('aXbturnstream.replay.x.samples.v1'), undefined);
    assert.equal(r.match('a.bturnstream.replay.x.judgements.v1'), undefined, 'judgements not among the stored topics');
  });

  it('refuses a tag that no replay can have, and follows nothing with no tag', () => {
    assert.throws(() => new ReplayTopics('', SINK_TOPICS, ['ok', 'a.b']), /letters, digits/);
    assert.throws(() => new ReplayTopics('', SINK_TOPICS, ['.*']), /letters, digits/);
    const none = new ReplayTopics('', SINK_TOPICS, []);
    assert.equal(none.match(topicName('pairs', { tag: 'x' })), undefined);
  });
});
