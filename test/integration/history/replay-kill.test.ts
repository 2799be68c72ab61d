/**
 * kill -9 in the middle of a batch replay, after some of its transactions have committed: run the
 * same command again and every pair, judgement and sample is there exactly once, the same set as a
 * replay that was never killed, in exact numbers. The history holds gateway sessions and the
 * reported import (conversations in no order of time), so the resumed run also re-derives what
 * was committed on event time without writing it again.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { importFile } from '../../../history/index.ts';
import { defaultGroupId } from '../../../processors/index.ts';
import { createEventCodecs, readToEnd } from '../../../streams/index.ts';
import { ensureStack } from '../../support/stack.ts';
import { reportedHistory } from '../../unit/history/support/generated-history.ts';
import { chat, startFakeOpenAI, type FakeServer } from '../../unit/processors/support/fake-openai.ts';
import { conversation, family, kill9, spawnTurnstream, waitFor, type Family } from '../processors/support.ts';

const SESSIONS = 60;
const TURNS = 3;
/** The reported import: 43 answers, each paired with the user's reply (untokenized: judged, no samples). */
const REPORTED = 43;
/** Every main turn paired once: the gateway's (the last of each session with its end marker) and the imported ones. */
const PAIRS = SESSIONS * TURNS + REPORTED;

describe('a batch replay killed with -9 mid-run', { timeout: 300_000 }, () => {
  let f: Family;
  let stack: { brokers: string; registryUrl: string };
  let judge: FakeServer;
  let home: string;
  let configFile: string;

  before(async () => {
    f = await family('replaykill');
    stack = await ensureStack();
    home = await mkdtemp(join(tmpdir(), 'replay-kill-'));
    // A slow judge (60 ms a call, 2 at a time) and 20 pairs per transaction: about a dozen
    // transactions over several seconds, so the kill lands between two of them.
    judge = await startFakeOpenAI((_req, n) => ({ ...chat(`verdict \\boxed{${n % 3 === 0 ? -1 : 1}}`), delayMs: 60 }));
    configFile = join(home, 'replay.json');
    await writeFile(
      configFile,
      JSON.stringify({
        judge: { baseUrl: judge.baseUrl, model: 'slow', mode: 'rl', votes: 1, retries: 0 },
        samples: { method: 'rl' },
        concurrency: 2,
        batchSize: 20,
      }),
    );
    const turns = Array.from({ length: SESSIONS }, (_, s) =>
      conversation(`kill-${s}`, ['hi', 'thanks', 'bye'], (i) => ({ sessionDone: i === TURNS - 1 })),
    ).flat();
    await f.producer.sendAll(turns.map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t })));
    const file = join(home, 'reported.jsonl');
    await writeFile(
      file,
      reportedHistory()
        .map((l) => JSON.stringify(l))
        .join('\n') + '\n',
    );
    const imported = await importFile({ kafka: f.kafka, codecs: f.codecs, file, format: 'openai-chat' });
    assert.equal(imported.imported, REPORTED);
  });
  after(async () => {
    await f?.close();
    await judge?.close();
    await rm(home, { recursive: true, force: true });
  });

  const replayCli = (tag: string): Promise<ChildProcess> =>
    spawnTurnstream(f, ['replay', '--from', '0', '--tag', tag, '--config', configFile, '--json'], { TURNSTREAM_HOME: home });

  type Summary = {
    resumed: boolean;
    pairs: { total: number; byEnd: Record<string, number>; withNextState: number };
    judgements: { total: number };
    samples: { total: number };
  };
  async function finish(child: ChildProcess): Promise<Summary> {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => void (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => void (err = (err + d.toString()).slice(-4000)));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    assert.equal(code, 0, err);
    return JSON.parse(out.trim().split('\n').at(-1)!);
  }

  /** Each tagged output topic, read committed: its record count and its distinct ids. */
  async function outputs(tag: string): Promise<Record<string, { records: number; ids: Set<string> }>> {
    const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix: f.prefix, tag } });
    const out: Record<string, { records: number; ids: Set<string> }> = {};
    for (const id of ['pairs', 'judgements', 'samples'] as const) {
      const got = { records: 0, ids: new Set<string>() };
      await readToEnd(f.kafka, codecs.topic(id), async (r) => {
        if (!r.value) return;
        const v = (await codecs.of(id).decode(r.value)) as { pairId?: string; judgementId?: string; sampleId?: string };
        got.records++;
        got.ids.add(String(v.pairId ?? v.judgementId ?? v.sampleId));
      });
      out[id] = got;
    }
    return out;
  }

  async function committed(tag: string): Promise<number> {
    const admin = f.kafka.admin();
    await admin.connect();
    try {
      const [t] = await admin.fetchOffsets({
        groupId: defaultGroupId('replay', { prefix: f.prefix, tag }),
        topics: [f.codecs.topic('turns')],
      });
      return t.partitions.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
    } finally {
      await admin.disconnect();
    }
  }

  it('resumes to the same outputs, each exactly once', async () => {
    const victim = await replayCli('killed');
    let exitedEarly = false;
    victim.once('exit', () => void (exitedEarly = true));
    // Killed once its first transactions have committed part of the range.
    await waitFor('a committed replay transaction', async () => exitedEarly || (await committed('killed')) > 0, 120_000);
    assert.equal(exitedEarly, false, 'the replay finished before it could be killed: make the judge slower');
    await kill9(victim);
    const atKill = await committed('killed');
    const turnsInRange = SESSIONS * TURNS + REPORTED;
    assert.ok(atKill > 0 && atKill < turnsInRange, `killed with ${atKill} of ${turnsInRange} turns committed`);
    const partial = await outputs('killed');
    assert.ok(partial.pairs.records > 0 && partial.pairs.records < PAIRS, `${partial.pairs.records} pairs before the kill`);

    const resumed = await finish(await replayCli('killed'));
    assert.equal(resumed.resumed, true);
    const clean = await finish(await replayCli('clean'));
    assert.equal(clean.resumed, false);

    // Exact numbers: every main turn paired once, every pair judged once, a sample from every
    // judgement of a tokenized (gateway) turn; the resumed run counts what its topics hold.
    const exact = {
      pairs: PAIRS,
      byEnd: { none: SESSIONS * (TURNS - 1) + REPORTED, SESSION_DONE: SESSIONS },
      withNextState: SESSIONS * (TURNS - 1) + REPORTED,
      judgements: PAIRS,
      samples: SESSIONS * TURNS,
    };
    for (const [name, s] of [
      ['resumed', resumed],
      ['clean', clean],
    ] as const) {
      assert.equal(s.pairs.total, exact.pairs, `${name}: pairs`);
      assert.deepEqual(s.pairs.byEnd, exact.byEnd, `${name}: pairs by end marker`);
      assert.equal(s.pairs.withNextState, exact.withNextState, `${name}: pairs with a next state`);
      assert.equal(s.judgements.total, exact.judgements, `${name}: judgements`);
      assert.equal(s.samples.total, exact.samples, `${name}: samples`);
    }
    const [got, want] = [await outputs('killed'), await outputs('clean')];
    for (const [id, n] of [
      ['pairs', exact.pairs],
      ['judgements', exact.judgements],
      ['samples', exact.samples],
    ] as const) {
      assert.equal(want[id].records, n, `${id}: a replay never killed writes ${n}`);
      assert.equal(got[id].records, n, `${id}: killed and resumed, ${n} records, none twice`);
      assert.equal(got[id].ids.size, n);
      assert.deepEqual([...got[id].ids].sort(), [...want[id].ids].sort(), `${id}: the same set as a replay never killed`);
    }
  });
});
