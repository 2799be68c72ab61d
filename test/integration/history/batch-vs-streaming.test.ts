import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createEmbeddedJudge } from '../../../processors/index.ts';
import { importFile, parseBound, runReplay, runStreamingReplay, type ReplayOptions } from '../../../history/index.ts';
import type { Feedback, Turn } from '../../../schemas/index.ts';
import { createEventCodecs, readToEnd } from '../../../streams/index.ts';
import { exampleFeedback } from '../../support/fixtures.ts';
import { ensureStack } from '../../support/stack.ts';
import { conversation, family, type Family } from '../processors/support.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));
const REPLIES = ['hello', 'Thanks, that works 👍', "No, that's too long.", 'ok', 'Great, perfect!', 'That is wrong, try again.'];
const DAY = 24 * 3600_000;

/** The outputs of a replay by id, without what differs by construction: the tag and the time a judgement or sample was made. */
async function outputsOf(f: Family, registryUrl: string, tag: string) {
  const codecs = await createEventCodecs({ registryUrl, naming: { prefix: f.prefix, tag } });
  const out = { pairs: new Map<string, unknown>(), judgements: new Map<string, unknown>(), samples: new Map<string, unknown>() };
  const read = async (id: 'pairs' | 'judgements' | 'samples', idOf: (v: Record<string, unknown>) => string) => {
    let copies = 0;
    await readToEnd(f.kafka, codecs.topic(id), async (r) => {
      if (!r.value) return;
      const v = structuredClone(await codecs.of(id).decode(r.value)) as unknown as Record<string, unknown>;
      v.tag = null;
      if (v.pair) (v.pair as Record<string, unknown>).tag = null;
      // The imported session's user id comes from its feedback only, so it depends on which topic
      // the stream processor happened to read first; the batch replay reads in event time order.
      if ((v.sessionId as string).startsWith('oc-')) {
        v.userId = null;
        if (v.pair) (v.pair as Record<string, unknown>).userId = null;
      }
      if (id !== 'pairs') v.createdAt = 0;
      // A session closed by the idle timeout at the end of the history: the stream processors
      // close it at the wall clock of the moment, the batch replay as of when it went idle.
      else if (v.endMarker === 'IDLE_TIMEOUT') v.createdAt = 0;
      if (out[id].has(idOf(v))) copies++;
      out[id].set(idOf(v), v);
    });
    assert.equal(copies, 0, `${tag}: no ${id} written twice`);
  };
  await read('pairs', (v) => v.pairId as string);
  await read('judgements', (v) => v.judgementId as string);
  await read('samples', (v) => v.sampleId as string);
  return out;
}

describe('batch replay against the stream-processor replay (real Kafka and registry)', { timeout: 300_000 }, () => {
  let f: Family;
  let registryUrl: string;
  let planDir: string;
  const turns: Turn[] = [];
  const feedback: Feedback[] = [];

  before(async () => {
    f = await family('replay-cmp');
    registryUrl = (await ensureStack()).registryUrl;
    planDir = mkdtempSync(join(tmpdir(), 'replay-cmp-'));
    const s = await importFile({ kafka: f.kafka, codecs: f.codecs, file: fixture('openclaw-records.jsonl'), format: 'openclaw-record' });
    assert.equal(s.imported, 6);
    // Twelve gateway sessions of a day ago: every other one ends with sessionDone, the rest are
    // closed by the idle timeout; some turns get a 👍/👎 before the next turn, one names no turn.
    const t0 = Date.now() - DAY;
    for (let k = 0; k < 12; k++) {
      const n = 3 + (k % 4);
      const base = t0 + k * 60_000;
      const c = conversation(
        `cmp-${k}`,
        Array.from({ length: n }, (_, i) => REPLIES[(k + i) % REPLIES.length]),
        (i) => ({ sessionDone: k % 2 === 0 && i === n - 1, requestedAt: base + i * 1000, completedAt: base + i * 1000 + 200 }),
      );
      turns.push(...c);
      if (k % 3 === 0)
        feedback.push(
          exampleFeedback({
            feedbackId: randomUUID(),
            sessionId: `cmp-${k}`,
            turnId: c[1].turnId,
            rating: k % 2 === 0 ? 1 : -1,
            text: null,
            createdAt: base + 1500,
          }),
        );
      if (k === 4)
        feedback.push(
          exampleFeedback({ feedbackId: randomUUID(), sessionId: 'cmp-4', turnId: null, rating: -1, text: 'no', createdAt: base + 2500 }),
        );
    }
    await f.producer.sendAll(turns.map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t })));
    await f.producer.sendAll(feedback.map((x) => ({ id: 'feedback' as const, key: x.sessionId, value: x })));
  });
  after(async () => {
    await f?.close();
  });

  it('the same history gives the same pairs, judgements and samples, by id and content', async () => {
    const options = (tag: string): ReplayOptions => ({
      kafka: f.kafka,
      registryUrl,
      prefix: f.prefix,
      tag,
      from: parseBound('0'),
      judge: createEmbeddedJudge({ mode: 'rl' }),
      samples: { method: 'rl' },
      partitions: 2,
      planFile: join(planDir, `${tag}.json`),
    });
    const streaming = await runStreamingReplay(options('streaming'));
    // Small transactions, so the batch replay commits several times per partition.
    const batch = await runReplay({ ...options('batch'), batchSize: 5 });
    const a = await outputsOf(f, registryUrl, 'streaming');
    const b = await outputsOf(f, registryUrl, 'batch');

    // 12 sessions: every main turn is paired (end markers included), plus the imported 5.
    // Every main turn is paired (end markers included), plus the imported 5.
    assert.equal(b.pairs.size, turns.length + 5);
    // The stream processors leave out the end pairs of sessions closed by the idle timeout at the
    // end of the history: closed at the wall clock, they are held for the feedback grace period
    // and the streaming replay stops before it ends. The batch replay releases them (no record of
    // the range is left to reach them). Everything else is the same, by id and content.
    const idleEnds = new Set(
      [...b.pairs.values()]
        .filter((p) => (p as { endMarker: string | null }).endMarker === 'IDLE_TIMEOUT')
        .map((p) => (p as { pairId: string }).pairId),
    );
    assert.equal(idleEnds.size, 6, 'the six sessions without sessionDone end by the idle timeout');
    for (const id of ['pairs', 'judgements', 'samples'] as const) {
      const turnOf = (k: string) => k.split(':')[0];
      const extra = [...b[id].keys()].filter((k) => !a[id].has(k));
      assert.deepEqual(
        extra.filter((k) => !idleEnds.has(turnOf(k))),
        [],
        `${id}: nothing else only in the batch replay`,
      );
      assert.deepEqual(
        [...a[id].keys()].filter((k) => !b[id].has(k)),
        [],
        `${id}: nothing only in the streaming replay`,
      );
      for (const [k, v] of a[id]) assert.deepEqual(b[id].get(k), v, `${id} ${k}: the same content`);
    }
    const withFeedback = [...b.pairs.values()].filter((p) => (p as { feedback: unknown[] }).feedback.length > 0).length;
    assert.equal(withFeedback, feedback.length + 2, 'the gateway feedback and the imported one reached their pairs');
    assert.equal(batch.pairs.total, streaming.pairs.total + idleEnds.size);
    assert.equal(batch.judgements.total, streaming.judgements.total + idleEnds.size);
    assert.equal(batch.deadLetters.total, 0);
  });
});
