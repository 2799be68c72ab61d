import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Feedback, Turn } from '../../../schemas/index.ts';
import { importFile } from '../../../history/index.ts';
import { readToEnd } from '../../../streams/index.ts';
import type { Family } from '../processors/support.ts';
import { suiteFamily } from '../../support/suite-family.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));

async function endOffsets(f: Family, id: 'turns' | 'feedback'): Promise<string[]> {
  const admin = f.kafka.admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets(f.codecs.topic(id))).sort((a, b) => a.partition - b.partition).map((o) => o.high);
  } finally {
    await admin.disconnect();
  }
}

async function read<K extends 'turns' | 'feedback'>(
  f: Family,
  id: K,
): Promise<Array<{ value: K extends 'turns' ? Turn : Feedback; timestamp: number }>> {
  const out: Array<{ value: never; timestamp: number }> = [];
  await readToEnd(f.kafka, f.codecs.topic(id), async (r) => {
    if (r.value) out.push({ value: structuredClone(await f.codecs.of(id).decode(r.value)) as never, timestamp: r.timestamp });
  });
  return out;
}

describe('turnstream import on Kafka', { timeout: 180_000 }, () => {
  const family = suiteFamily('import');

  it('imports the good lines, reports every bad line, and a second import adds nothing', async () => {
    const f = family();
    const s1 = await importFile({ kafka: f.kafka, codecs: f.codecs, file: fixture('openclaw-records.jsonl'), format: 'openclaw-record' });
    assert.deepEqual(
      { read: s1.read, imported: s1.imported, duplicates: s1.duplicates, rejected: s1.rejected, fb: s1.feedbackImported },
      { read: 11, imported: 6, duplicates: 0, rejected: 5, fb: 2 },
    );
    assert.deepEqual(
      s1.errors.map((e) => e.line),
      [6, 7, 8, 9, 12],
    );
    for (const e of s1.errors) assert.ok(e.reason.length > 10, `line ${e.line} has a reason`);

    const turns = await read(f, 'turns');
    const feedback = await read(f, 'feedback');
    assert.equal(turns.length, 6);
    assert.equal(feedback.length, 2);
    assert.ok(turns.every((t) => t.value.sessionSource === 'IMPORTED' && t.value.tokenized === false));
    // Original times, in the events and as the Kafka timestamps (replay --from <time> finds them).
    const first = turns.find((t) => t.value.sessionId === 'oc-1' && t.value.requestMessages.length === 2)!;
    assert.equal(first.value.requestedAt, Date.parse('2026-02-14T20:00:00Z'));
    assert.equal(first.timestamp, first.value.requestedAt);

    const before = [await endOffsets(f, 'turns'), await endOffsets(f, 'feedback')];
    const s2 = await importFile({ kafka: f.kafka, codecs: f.codecs, file: fixture('openclaw-records.jsonl'), format: 'openclaw-record' });
    assert.deepEqual(
      { imported: s2.imported, duplicates: s2.duplicates, rejected: s2.rejected, fb: s2.feedbackImported, fbDup: s2.feedbackDuplicates },
      { imported: 0, duplicates: 6, rejected: 5, fb: 0, fbDup: 2 },
    );
    assert.deepEqual([await endOffsets(f, 'turns'), await endOffsets(f, 'feedback')], before, 'no event added');
  });

  it('imports OpenAI chat conversations as one turn per assistant message', async () => {
    const f = family();
    const s = await importFile({ kafka: f.kafka, codecs: f.codecs, file: fixture('openai-chat.jsonl'), format: 'openai-chat' });
    assert.deepEqual(
      { read: s.read, imported: s.imported, rejected: s.rejected, lines: s.errors.map((e) => e.line), fb: s.feedbackImported },
      { read: 6, imported: 6, rejected: 3, lines: [4, 5, 6], fb: 1 },
    );
    const again = await importFile({ kafka: f.kafka, codecs: f.codecs, file: fixture('openai-chat.jsonl'), format: 'openai-chat' });
    assert.equal(again.imported, 0);
    assert.equal(again.duplicates, 6);
    assert.equal((await read(f, 'turns')).length, 12);
  });
});
