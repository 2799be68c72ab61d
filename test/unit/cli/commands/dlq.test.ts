import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkIds, dlqFilter, letterTable, parseTime, resolveIds } from '../../../../cli/commands/dlq.ts';
import { deadLetterId, type StoredDeadLetter } from '../../../../streams/index.ts';
import { exampleDeadLetter } from '../../../support/fixtures.ts';

const NOW = Date.parse('2026-12-06T12:00:00Z');
const TOPICS = new Map([
  ['pairs', 'p.turnstream.pairs.v1'],
  ['turns', 'p.turnstream.turns.v1'],
]);

function letter(over: Partial<StoredDeadLetter> = {}): StoredDeadLetter {
  const d = { ...exampleDeadLetter(), ...over };
  return { id: deadLetterId(d), dlqPartition: 0, dlqOffset: '3', replayedAt: null, ...d, ...over };
}

describe('turnstream dlq: flags', () => {
  it('reads times as ISO-8601, epoch ms or a span before now, and refuses anything else', () => {
    assert.equal(parseTime('2026-12-06T11:00:00Z', '--since', NOW), NOW - 3_600_000);
    assert.equal(parseTime('1796540000000', '--since', NOW), 1_796_540_000_000);
    assert.deepEqual(
      ['90s', '30m', '2h', '7d'].map((s) => NOW - parseTime(s, '--since', NOW)),
      [90_000, 1_800_000, 7_200_000, 604_800_000],
    );
    for (const bad of ['yesterday', '2h ago', '12', '-1h', ''])
      assert.throws(() => parseTime(bad, '--until', NOW), { code: 'TS_ERR_INVALID_INPUT', param: '--until' }, bad);
  });

  it('builds the filter: a topic by id or full name, a known code, time bounds in order; refuses the rest', () => {
    assert.deepEqual(dlqFilter({ stage: 'judge', code: 'TS_ERR_JUDGE_FAILED', topic: 'pairs', since: '1h' }, TOPICS, NOW), {
      stage: 'judge',
      code: 'TS_ERR_JUDGE_FAILED',
      topic: 'p.turnstream.pairs.v1',
      since: NOW - 3_600_000,
    });
    assert.deepEqual(dlqFilter({ topic: 'p.turnstream.turns.v1' }, TOPICS, NOW), { topic: 'p.turnstream.turns.v1' });
    for (const [flags, param] of [
      [{ code: 'JUDGE_FAILED' }, '--code'],
      [{ topic: 'samples' }, '--topic'],
      [{ stage: 'Judge!' }, '--stage'],
      [{ since: '1h', until: '2h' }, '--since'],
    ] as const)
      assert.throws(() => dlqFilter(flags, TOPICS, NOW), { code: 'TS_ERR_INVALID_INPUT', param }, JSON.stringify(flags));
  });

  it('takes ids or unique prefixes of at least 6 characters, and names a missing or ambiguous one', () => {
    const a = letter({ offset: '1' });
    const b = letter({ offset: '2' });
    assert.deepEqual(resolveIds([a.id.slice(0, 8), b.id], [a, b]), [a.id, b.id]);
    assert.throws(() => checkIds(['abc']), /6 to 36 characters/);
    assert.throws(() => checkIds(['xyz123']), /6 to 36 characters/);
    assert.throws(() => resolveIds(['ffffff'], [a, b]), /no dead letter has the id ffffff/);
    const twins = [letter({ id: 'abcdef01', offset: '5' }), letter({ id: 'abcdef02', offset: '6' })];
    assert.throws(() => resolveIds(['abcdef'], twins), /the id abcdef names 2 dead letters/);
  });

  it('lists one line per letter under a header, re-sent ones with their time', () => {
    const text = letterTable([
      letter({ failedAt: NOW, message: 'every vote\nfailed' }),
      letter({ offset: '43', failedAt: NOW + 1000, replayedAt: NOW + 60_000 }),
    ]);
    const lines = text.trimEnd().split('\n');
    assert.equal(lines.length, 3);
    assert.match(lines[0], /^ID +FAILED AT \(UTC\) +STAGE +CODE +RECORD +REPLAYED +MESSAGE$/);
    assert.match(lines[1], /2026-12-06 12:00:00 +session-assembler +TS_ERR_DECODE +turnstream\.turns\.v1\[0\]@42 +- +every vote failed$/);
    assert.match(lines[2], /@43 +2026-12-06 12:01:00 /);
    assert.equal(letterTable([]), 'no dead letters\n');
  });
});
