/**
 * Replay = live on Kafka. Imported files (the reported one: 32 conversations, 43 answers, each
 * followed by the user; a generated one: short and long conversations, tool turns, side lines,
 * ratings, close and identical times, lines in no order of time; OpenClaw's record fixture) and
 * three days of gateway traffic go into the live topics. The live processors (session assembler,
 * judge, sample builder) pair, judge and build samples from them; `turnstream replay --from 0`
 * re-derives them with the same configuration. The pairs, judgements and samples must be the
 * same, by id and content (the replay tag and the time a judgement or sample was made aside).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import { importFile, parseBound, runReplay, type ReplaySummary } from '../../../history/index.ts';
import { createEmbeddedJudge, startJudge, startSampleBuilder, startSessionAssembler } from '../../../processors/index.ts';
import type { SessionState, TurnPair } from '../../../schemas/index.ts';
import { createEventCodecs, readToEnd, type EventCodecs, type EventProducer, type ProcessorHandle } from '../../../streams/index.ts';
import { ensureStack } from '../../support/stack.ts';
import { gatewayHistory, importedHistory, reportedHistory } from '../../unit/history/support/generated-history.ts';
import { family, waitFor } from '../processors/support.ts';

const DAY = 24 * 3600_000;
const PARTITIONS = 3;
type Outputs = Record<'pairs' | 'judgements' | 'samples', Map<string, Record<string, unknown>>>;

/** A topic family's outputs by id, without what differs by construction: the replay tag and when a judgement or sample was made. */
async function outputsOf(kafka: Kafka, codecs: EventCodecs): Promise<Outputs> {
  const out: Outputs = { pairs: new Map(), judgements: new Map(), samples: new Map() };
  const ids = { pairs: 'pairId', judgements: 'judgementId', samples: 'sampleId' } as const;
  for (const id of ['pairs', 'judgements', 'samples'] as const) {
    await readToEnd(kafka, codecs.topic(id), async (r) => {
      if (!r.value) return;
      const v = structuredClone(await codecs.of(id).decode(r.value)) as unknown as Record<string, unknown>;
      v.tag = null;
      if (v.pair) (v.pair as Record<string, unknown>).tag = null;
      if (id !== 'pairs') v.createdAt = 0;
      const key = String(v[ids[id]]);
      assert.ok(!out[id].has(key), `${codecs.topic(id)}: ${key} written twice`);
      out[id].set(key, v);
    });
  }
  return out;
}

const count = async (kafka: Kafka, codecs: EventCodecs, id: 'pairs' | 'judgements' | 'samples') => {
  let n = 0;
  await readToEnd(kafka, codecs.topic(id), (r) => void (r.value && n++));
  return n;
};

/** Whether the live assembler has nothing left to emit: every session in its changelog closed, nothing held or waiting. */
async function settled(kafka: Kafka, codecs: EventCodecs): Promise<boolean> {
  const latest = new Map<string, SessionState | null>();
  await readToEnd(kafka, codecs.topic('sessionState'), async (r) => {
    latest.set(r.key?.toString('utf8') ?? '', r.value ? await codecs.of('sessionState').decode(r.value) : null);
  });
  return latest.size > 0 && [...latest.values()].every((s) => !s || (s.closed && s.held.length === 0 && s.earlyFeedback.length === 0));
}

describe('replay = live on Kafka: an imported file and gateway traffic, paired live and replayed', { timeout: 300_000 }, () => {
  let kafka: Kafka;
  let codecs: EventCodecs;
  let producer: EventProducer;
  let prefix: string;
  let registryUrl: string;
  let home: string;
  const live: ProcessorHandle[] = [];

  before(async () => {
    registryUrl = (await ensureStack()).registryUrl;
    ({ kafka, codecs, producer, prefix } = await family('replay-live', PARTITIONS));
    home = await mkdtemp(join(tmpdir(), 'replay-live-'));

    const file = join(home, 'history.jsonl');
    const lines = [...reportedHistory(), ...importedHistory(7, { conversations: 40 })];
    await writeFile(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const imported = await importFile({ kafka, codecs, file, format: 'openai-chat', now: () => Date.parse('2026-03-20T12:00:00Z') });
    assert.equal(imported.rejected, 0, JSON.stringify(imported.errors));
    // OpenClaw's record file too: its user id is on the last record and its 👎 on the feedback topic.
    const records = fileURLToPath(new URL('../../fixtures/openclaw-records.jsonl', import.meta.url));
    assert.equal((await importFile({ kafka, codecs, file: records, format: 'openclaw-record' })).imported, 6);

    // Gateway traffic of a few days ago, in the order it reached Kafka.
    const traffic = gatewayHistory(11, { start: Date.now() - 3 * DAY, sessions: 20, idleTimeoutMs: 30 * 60_000, closedRetentionMs: DAY });
    await producer.sendAll(traffic.map((w) => ({ id: w.topicId, key: w.value.sessionId, value: w.value }) as never));
  });
  after(async () => {
    await Promise.all(live.map((h) => h.stop().catch(() => undefined)));
    await producer?.disconnect();
    await rm(home, { recursive: true, force: true });
  });

  it('the same pairs, judgements and samples, by id and content; the reported 43 answers each with its next state', async () => {
    const replay: ReplaySummary = await runReplay({
      kafka,
      registryUrl,
      prefix,
      tag: 'cmp',
      from: parseBound('0'),
      judge: createEmbeddedJudge({ mode: 'rl' }),
      samples: { method: 'rl' },
      partitions: PARTITIONS,
      batchSize: 50,
      planFile: join(home, 'cmp.json'),
    });
    assert.equal(replay.deadLetters.total, 0);
    assert.ok(replay.samples.total > 0, 'gateway turns make samples');

    // The live pipeline, on the same records with the same configuration (the defaults).
    const common = { kafka, codecs };
    live.push(await startSessionAssembler(common));
    live.push(await startJudge({ ...common, judge: createEmbeddedJudge({ mode: 'rl' }), judgeUntrainable: true }));
    live.push(await startSampleBuilder({ ...common, method: 'rl' }));
    await waitFor('the live assembler to close every session and let go of every pair', () => settled(kafka, codecs), 180_000);
    for (const [id, n] of [
      ['pairs', replay.pairs.total],
      ['judgements', replay.judgements.total],
      ['samples', replay.samples.total],
    ] as const)
      await waitFor(`${n} live ${id}`, async () => (await count(kafka, codecs, id)) >= n, 120_000);
    await Promise.all(live.splice(0).map((h) => h.stop()));

    const a = await outputsOf(kafka, codecs);
    const b = await outputsOf(kafka, await createEventCodecs({ registryUrl, naming: { prefix, tag: 'cmp' } }));
    for (const id of ['pairs', 'judgements', 'samples'] as const) {
      assert.deepEqual(
        [...a[id].keys()].filter((k) => !b[id].has(k)),
        [],
        `${id}: nothing only live`,
      );
      assert.deepEqual(
        [...b[id].keys()].filter((k) => !a[id].has(k)),
        [],
        `${id}: nothing only in the replay`,
      );
      for (const [k, v] of a[id]) assert.deepEqual(b[id].get(k), v, `${id} ${k}: the same content`);
    }

    const reported = [...b.pairs.values()].filter((p) => String(p.sessionId).startsWith('reported-')) as unknown as TurnPair[];
    assert.equal(reported.length, 43);
    assert.deepEqual(
      reported.filter((p) => p.endMarker !== null || p.nextState.length === 0).map((p) => `${p.sessionId} #${p.turn.mainTurnIndex}`),
      [],
      'every answer of the reported file paired with the user message after it',
    );
    const feedbackPairs = [...b.pairs.values()].filter((p) => (p.feedback as unknown[]).length > 0).length;
    assert.ok(feedbackPairs > 0, 'feedback reached pairs, the same in both');
  });
});
