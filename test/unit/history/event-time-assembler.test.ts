import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assemblePartition, EventTimeAssembler, openaiChatParser, watermarks, type HistoryEvent } from '../../../history/index.ts';
import type { TurnPair } from '../../../schemas/index.ts';

const HOUR = 3600_000;
const parse = openaiChatParser(() => 0);

/** One partition's turns from openai-chat lines, in the file's order. */
function partition(lines: object[]): HistoryEvent[] {
  return lines.flatMap((l) => parse(l).turns).map((value, i) => ({ topicId: 'turns', offset: BigInt(i), value }) as HistoryEvent);
}

function replay(turns: HistoryEvent[]): TurnPair[] {
  const out: TurnPair[] = [];
  for (const { pairs } of assemblePartition(new EventTimeAssembler({}), turns, [], () => Date.parse('2026-06-01T00:00:00Z')))
    out.push(...pairs);
  return out;
}

const short = (id: string, timestamp: string) => ({
  session_id: id,
  timestamp,
  messages: [
    { role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: 'What is Kafka?' },
    { role: 'assistant', content: 'A log.' },
    { role: 'user', content: 'Thanks, great 👍' },
    { role: 'assistant', content: "You're welcome!" },
    { role: 'user', content: "No, that's wrong." },
  ],
});

describe('the batch replay on event time (history/event-time-assembler.ts)', () => {
  it("the reported case: a short conversation read after a later one keeps its first turn's next state", () => {
    // Friday's conversation comes first in the file, Monday's after it, in one partition.
    const pairs = replay(partition([short('friday', '2026-03-06T18:00:00Z'), short('monday', '2026-03-02T09:00:00Z')]));
    assert.equal(pairs.length, 4);
    for (const p of pairs) {
      assert.equal(p.endMarker, null, `${p.sessionId} #${p.turn.mainTurnIndex}: not closed by the idle timeout`);
      assert.deepEqual(
        p.nextState.map((i) => i.content),
        [p.turn.mainTurnIndex === 0 ? 'Thanks, great 👍' : "No, that's wrong."],
      );
    }
  });

  it('a gap longer than the idle timeout inside a conversation still closes it there', () => {
    const line = short('gap', '2026-03-02T09:00:00Z');
    const stamped = {
      ...line,
      messages: line.messages.map((m, i) => ({
        ...m,
        timestamp: new Date(Date.parse('2026-03-02T09:00:00Z') + (i < 4 ? i : i + 2 * 60) * 60_000).toISOString(),
      })),
    };
    const pairs = replay(partition([short('later', '2026-03-09T09:00:00Z'), stamped]));
    const first = pairs.find((p) => p.sessionId === 'gap' && p.turn.mainTurnIndex === 0)!;
    assert.equal(first.endMarker, 'IDLE_TIMEOUT');
    assert.equal(first.createdAt, Date.parse('2026-03-02T09:02:00Z') + HOUR / 2, 'as of the moment it went idle');
  });

  it('watermarks: for each event, the earliest event time from it to the end', () => {
    const at = (t: number): HistoryEvent => ({ topicId: 'feedback', offset: 0n, value: { createdAt: t } }) as unknown as HistoryEvent;
    assert.deepEqual(watermarks([at(5), at(9), at(3), at(7)]), [3, 3, 3, 7]);
    assert.deepEqual(watermarks([]), []);
  });
});
