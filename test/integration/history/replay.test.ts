import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Kafka } from 'kafkajs';
import { createEmbeddedJudge, createLlmJudge, type Judge } from '../../../processors/index.ts';
import { importFile, parseBound, runReplay, type ReplaySummary } from '../../../history/index.ts';
import type { TopicId } from '../../../schemas/index.ts';
import { createEventCodecs, readToEnd } from '../../../streams/index.ts';
import { ensureStack } from '../../support/stack.ts';
import { chat, startFakeOpenAI, type FakeServer } from '../../unit/processors/support/fake-openai.ts';
import { conversation, family, type Family } from '../processors/support.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));
const LIVE: TopicId[] = ['turns', 'feedback', 'sessionState', 'pairs', 'judgements', 'samples', 'dlq'];

async function ends(kafka: Kafka, topics: string[]): Promise<Record<string, string[]>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const out: Record<string, string[]> = {};
    for (const t of topics) out[t] = (await admin.fetchTopicOffsets(t)).sort((a, b) => a.partition - b.partition).map((o) => o.high);
    return out;
  } finally {
    await admin.disconnect();
  }
}

describe('turnstream replay on Kafka', { timeout: 300_000 }, () => {
  let f: Family;
  let registryUrl: string;
  let server: FakeServer;
  let planDir: string;
  // Gateway-style session P (tokenized): t0 → thanks (+), t1 → correction (−), t2 → "bye" (0), t3 ends it.
  const p = conversation('P', ['hi', 'Thanks, that works 👍', "No, that's too long.", 'bye'], (i) => ({ sessionDone: i === 3 }));

  before(async () => {
    f = await family('replay');
    registryUrl = (await ensureStack()).registryUrl;
    planDir = mkdtempSync(join(tmpdir(), 'replay-plans-'));
    server = await startFakeOpenAI(() => chat('The assistant failed. \\boxed{-1}'));
    // History: imported OpenClaw records (untokenized) + the gateway-style session.
    const s = await importFile({ kafka: f.kafka, codecs: f.codecs, file: fixture('openclaw-records.jsonl'), format: 'openclaw-record' });
    assert.equal(s.imported, 6);
    await f.producer.sendAll(p.map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t })));
  });
  after(async () => {
    await f?.close();
    await server?.close();
  });

  const replay = (tag: string, judge: Judge, extra: Partial<Parameters<typeof runReplay>[0]> = {}): Promise<ReplaySummary> =>
    runReplay({
      kafka: f.kafka,
      registryUrl,
      prefix: f.prefix,
      tag,
      from: parseBound('0'),
      judge,
      samples: { method: 'rl' },
      partitions: 2,
      planFile: join(planDir, `${tag}.json`),
      ...extra,
    });

  async function judgementsOf(tag: string) {
    const codecs = await createEventCodecs({ registryUrl, naming: { prefix: f.prefix, tag } });
    const out = new Map<string, { score: number; tag: string | null }>();
    await readToEnd(f.kafka, codecs.topic('judgements'), async (r) => {
      if (r.value) {
        const j = await codecs.of('judgements').decode(r.value);
        out.set(j.turnId, { score: j.score, tag: j.tag });
      }
    });
    return out;
  }

  it('two judge configurations give two tagged result sets that differ as they should; the live topics are untouched', async () => {
    const liveTopics = LIVE.map((id) => f.codecs.topic(id));
    const liveBefore = await ends(f.kafka, liveTopics);

    const a = await replay('embedded', createEmbeddedJudge({ mode: 'rl' }));
    const b = await replay(
      'always-neg',
      createLlmJudge({ baseUrl: server.baseUrl, model: 'neg', mode: 'rl', votes: 1, retries: 0, timeoutMs: 5000 }),
    );

    // Same history, same pairs: P's 4 + the imported oc-1's 4 and oc-2's 1 (side turns never pair).
    for (const s of [a, b]) {
      assert.equal(s.range.turns, 6 + 4);
      assert.equal(s.pairs.total, 9);
      assert.equal(s.judgements.total, 9, 'imported (untokenized) turns are judged too');
      assert.equal(s.deadLetters.total, 0);
      assert.equal(s.skippedPastEnd, 0);
    }
    assert.deepEqual(a.judgements.judgeIds, ['embedded']);
    assert.deepEqual(b.judgements.judgeIds, ['llm:neg']);

    // P under the embedded judge: +1, −1, 0, end. Under the always-−1 judge: −1, −1, −1, end.
    const ja = await judgementsOf('embedded');
    const jb = await judgementsOf('always-neg');
    assert.deepEqual(
      p.map((t) => ja.get(t.turnId)?.score),
      [1, -1, 0, 0],
    );
    assert.deepEqual(
      p.map((t) => jb.get(t.turnId)?.score),
      [-1, -1, -1, 0],
    );
    assert.ok([...ja.values()].every((j) => j.tag === 'embedded'));
    // Every imported pair with a next state is scored −1 by the always-−1 judge.
    assert.ok(b.judgements.byScore['-1'] >= 3 + 3);

    // Samples only from tokenized turns: embedded → +1, −1 and the masked end; always-−1 → three −1 and the masked end.
    assert.equal(a.samples.total, 3);
    assert.deepEqual(a.samples.byReward, { '-1': 1, '0': 1, '1': 1 });
    assert.equal(b.samples.total, 4);
    assert.deepEqual(b.samples.byReward, { '-1': 3, '0': 1, '1': 0 });
    assert.equal(a.samples.masked, 1);
    assert.equal(b.samples.masked, 1);
    assert.ok(server.requests.length >= 3 + 3, 'the fake judge was asked');

    assert.deepEqual(await ends(f.kafka, liveTopics), liveBefore, 'live topics unchanged');
    assert.ok(a.topics.samples.includes('turnstream.replay.embedded.samples.v1'));
  });

  it('a time range selects history by its original time', async () => {
    // Only the imported history (February 2026); the gateway session P happened now.
    const s = await replay('february', createEmbeddedJudge({ mode: 'rl' }), {
      from: parseBound('2026-02-01T00:00:00Z'),
      to: parseBound('2026-03-01T00:00:00Z'),
    });
    assert.equal(s.range.turns, 6);
    assert.equal(s.range.feedback, 2);
    assert.equal(s.pairs.total, 5);
    assert.equal(s.judgements.total, 5);
    assert.equal(s.samples.total, 0, 'imported turns are untokenized: no token-level samples');
  });

  it('an interrupted replay resumes with the same groups and ends with the same result; a finished one adds nothing', async () => {
    const abort = new AbortController();
    const first = await replay('resume', createEmbeddedJudge({ mode: 'rl' }), { signal: abort.signal, onProgress: () => abort.abort() });
    assert.equal(first.interrupted, true);
    const second = await replay('resume', createEmbeddedJudge({ mode: 'rl' }));
    assert.equal(second.resumed, true);
    assert.equal(second.interrupted, false);
    assert.equal(second.pairs.total, 9);
    assert.equal(second.judgements.total, 9);
    assert.deepEqual(second.samples.byReward, { '-1': 1, '0': 1, '1': 1 });

    const codecs = await createEventCodecs({ registryUrl, naming: { prefix: f.prefix, tag: 'resume' } });
    const tagged = (['pairs', 'judgements', 'samples'] as const).map((id) => codecs.topic(id));
    const before = await ends(f.kafka, tagged);
    const third = await replay('resume', createEmbeddedJudge({ mode: 'rl' }));
    assert.equal(third.resumed, true);
    assert.deepEqual(await ends(f.kafka, tagged), before, 'a finished replay re-derives nothing');
    assert.equal(third.judgements.total, 9);

    await assert.rejects(replay('resume', createEmbeddedJudge(), { from: parseBound('1') }), /was started with --from 0/);
  });
});
