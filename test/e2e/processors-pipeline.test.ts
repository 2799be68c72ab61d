/**
 * The whole loop from the HTTP API to training samples: scripted conversations through the
 * gateway (the official `openai` client, the built-in tiny model), the session assembler, an LLM
 * judge (a fake OpenAI-compatible server with scripted votes: garbage, ties, timeouts) and one
 * sample builder per training method (RL, OPD, COMBINED; the teacher is the gateway's own base
 * checkpoint). Exactly the expected pairs, judgements, dead letters and samples come out.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { createGateway, type Gateway } from '../../gateway/index.ts';
import {
  createLlmJudge,
  loadTeacher,
  startJudge,
  startSampleBuilder,
  startSessionAssembler,
  type TrainMethod,
} from '../../processors/index.ts';
import type { Sample } from '../../schemas/index.ts';
import type { ProcessorHandle } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { caughtUpOn, family, readAll, waitFor, type Family } from '../integration/processors/support.ts';
import { caughtUp } from '../support/caught-up.ts';
import { startFakeOpenAI, type FakeServer } from '../unit/processors/support/fake-openai.ts';
import { SCRIPTED_HINT, scriptedJudge } from '../unit/processors/support/scripted-judge.ts';
import { ensureStack } from '../support/stack.ts';

/** Small enough to generate fast on 2 CPU cores. */
const TINY = { contextLength: 128, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 };
const JUDGE_TIMEOUT_MS = 1500;

type Msg = OpenAI.ChatCompletionMessageParam;

describe('gateway → assembler → judge → sample builders (RL, OPD, COMBINED)', { timeout: 300_000 }, () => {
  let home: string;
  let f: Family;
  let gw: Gateway;
  let url: string;
  let judgeServer: FakeServer;
  let script: ReturnType<typeof scriptedJudge>;
  const handles: ProcessorHandle[] = [];

  before(async () => {
    const stack = await ensureStack();
    home = await mkdtemp(join(tmpdir(), 'ts-e2e-processors-'));
    f = await family('e2e-processors');
    script = scriptedJudge({ lateMs: JUDGE_TIMEOUT_MS + 1000 });
    judgeServer = await startFakeOpenAI((r) => script(r.body));
    gw = createGateway({
      port: 0,
      home,
      logger: createLogger('gateway-e2e', 'warn'),
      builtin: { weightsDir: join(home, 'weights'), initConfig: TINY, defaultMaxTokens: 8 },
      kafka: { brokers: [stack.brokers], registryUrl: stack.registryUrl, naming: { prefix: f.prefix } },
    });
    url = await gw.start();

    const common = { kafka: f.kafka, codecs: f.codecs };
    const teacher = await loadTeacher({ weightsDir: join(home, 'weights'), waitMs: 30_000 });
    const judge = createLlmJudge({
      baseUrl: judgeServer.baseUrl,
      model: 'scripted',
      votes: 3,
      hintVotes: 1,
      timeoutMs: JUDGE_TIMEOUT_MS,
      retries: 1,
      minBackoffMs: 20,
    });
    handles.push(
      await startSessionAssembler({ ...common, idleTimeoutMs: 5000, expireIntervalMs: 250, feedbackGraceMs: 1500, quietMs: 1000 }),
      await startJudge({ ...common, judge, concurrency: 16 }),
      // One builder group per method, all reading the same judgements.
      ...(await Promise.all(
        (['rl', 'opd', 'combined'] as TrainMethod[]).map((method) =>
          startSampleBuilder({ ...common, groupId: `${f.prefix}sample-builder.${method}`, method, teacher }),
        ),
      )),
    );
    await Promise.all(handles.map((h) => h.ready));
  });

  after(async () => {
    await Promise.all(handles.map((h) => h.stop()));
    await gw?.stop();
    await judgeServer?.close();
    await f?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('gives exactly the expected pairs, judgements, dead letters and samples per method', async () => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
    /** One call; returns the turn id and the reply, appended to `history`. */
    const call = async (history: Msg[], user: string, headers: Record<string, string>): Promise<{ turnId: string; sessionId: string }> => {
      history.push({ role: 'user', content: user });
      const { data, response } = await client.chat.completions
        .create({ model: 'turnstream-tiny', messages: history, max_tokens: 8 }, { headers })
        .withResponse();
      history.push({ role: 'assistant', content: data.choices[0].message.content ?? '' });
      return { turnId: response.headers.get('x-turn-id')!, sessionId: response.headers.get('x-session-id')! };
    };

    // A: a client that names everything. A side turn (a heartbeat, its own messages) in the middle;
    // a 👍 on A0 sent after A1 (it arrives after the next turn); the last call ends the session.
    const aMsgs = [
      'hello',
      '[[pos]] thanks',
      '[[neg]] no, too long',
      '[[garbage]] hm',
      '[[tie]] ok',
      '[[slow]] and then?',
      '[[hintonly]] fine',
      '[[timeout]] go on',
      'bye',
    ];
    const histA: Msg[] = [{ role: 'system', content: 'Be brief.' }];
    const a: string[] = [];
    const headersA = { 'X-Session-Id': 'e2e-A', 'X-Turn-Type': 'main', 'X-User-Id': 'alice' };
    let thumbsUp = '';
    for (let i = 0; i < aMsgs.length; i++) {
      const last = i === aMsgs.length - 1;
      a.push((await call(histA, aMsgs[i], last ? { ...headersA, 'X-Session-Done': 'yes' } : headersA)).turnId);
      if (i === 1) {
        const res = await fetch(`${url}/v1/feedback`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ turn_id: a[0], rating: 1 }),
        });
        assert.equal(res.status, 201);
        thumbsUp = ((await res.json()) as { id: string }).id;
      }
      if (i === 2)
        await call([{ role: 'user', content: 'HEARTBEAT' }], 'HEARTBEAT_OK?', { 'X-Session-Id': 'e2e-A', 'X-Turn-Type': 'side' });
    }
    // B: a session id but no X-Turn-Type (clients without the header extension still train).
    const histB: Msg[] = [];
    const b = [
      (await call(histB, 'hi', { 'X-Session-Id': 'e2e-B' })).turnId,
      (await call(histB, '[[pos]] great', { 'X-Session-Id': 'e2e-B', 'X-Session-Done': '1' })).turnId,
    ];
    // C: no headers at all (the session is inferred from the history); then left idle.
    const histC: Msg[] = [];
    const c0 = await call(histC, 'a question', {});
    const c1 = await call(histC, '[[neg]] wrong', {});
    assert.equal(c1.sessionId, c0.sessionId, 'C is one inferred session');
    const c = [c0.turnId, c1.turnId];
    // S: side turns only.
    for (let i = 0; i < 2; i++) await call([], 'heartbeat', { 'X-Session-Id': 'e2e-S', 'X-Turn-Type': 'side' });

    // RL 8, OPD 6, COMBINED 9 (worked out per pair below); C's last pair waits for the idle timeout.
    await waitFor(
      '23 samples and 1 dead letter',
      async () => (await readAll(f, 'samples')).length >= 23 && (await readAll(f, 'dlq')).length >= 1,
      120_000,
    );
    await caughtUpOn(f, 'session-assembler', ['turns', 'feedback']);
    await caughtUpOn(f, 'judge', ['pairs']);
    for (const method of ['rl', 'opd', 'combined'])
      await caughtUp(f.kafka, `${f.prefix}sample-builder.${method}`, [f.codecs.topic('judgements')]);
    const [pairs, judgements, samples, dlq] = await Promise.all([
      readAll(f, 'pairs'),
      readAll(f, 'judgements'),
      readAll(f, 'samples'),
      readAll(f, 'dlq'),
    ]);

    // Pairs: every main turn once (A 9, B 2, C 2); side turns never.
    assert.equal(pairs.length, 13);
    assert.deepEqual(new Set(pairs.map((p) => p.pairId)), new Set([...a, ...b, ...c]));
    const pair = (id: string) => pairs.find((p) => p.pairId === id)!;
    assert.deepEqual(
      a.map((id) => pair(id).turn.mainTurnIndex),
      [...Array(9).keys()],
      'the side turn took no index',
    );
    assert.deepEqual(
      a.map((id) => pair(id).historyVerified),
      [...Array(8).fill(true), false],
    );
    assert.equal(pair(a[8]).endMarker, 'SESSION_DONE');
    assert.equal(pair(b[1]).endMarker, 'SESSION_DONE');
    assert.equal(pair(c[1]).endMarker, 'IDLE_TIMEOUT', 'the short idle timeout closed C');
    assert.deepEqual(
      pair(a[0]).feedback.map((x) => x.feedbackId),
      [thumbsUp],
      'the 👍 sent after the next turn reached its pair',
    );
    assert.deepEqual(
      pair(a[0]).nextState.map((x) => x.role),
      ['USER', 'FEEDBACK'],
    );
    assert.equal(pair(a[0]).userId, 'alice');
    assert.equal(pairs.filter((p) => p.sessionId === 'e2e-S').length, 0);

    // Judgements: all but the pair whose votes all timed out (→ DLQ, never scored 0).
    assert.equal(judgements.length, 12);
    assert.equal(new Set(judgements.map((j) => j.judgementId)).size, 12);
    const j = (id: string) => judgements.find((x) => x.turnId === id);
    assert.deepEqual(
      a.map((id) => j(id)?.score ?? 'dlq'),
      [1, -1, 0, 0, 1, 0, 'dlq', 0, 0],
    );
    assert.deepEqual(
      [...b, ...c].map((id) => j(id)!.score),
      [1, 0, -1, 0],
    );
    assert.deepEqual(
      j(a[2])!
        .votes.slice(0, 3)
        .map((v) => v.score),
      [null, null, null],
      'garbage votes are invalid, not errors',
    );
    assert.deepEqual(
      j(a[3])!
        .votes.slice(0, 3)
        .map((v) => v.score)
        .sort(),
      [-1, 1, null],
      'a tie',
    );
    // The slow pair's first vote times out and is retried. On a loaded machine the other votes can
    // time out too; the runtime then judges the pair again, and the committed votes are first
    // attempts of that second judging (the judge server saw the slow pair's three votes twice).
    const slow = j(a[4])!;
    assert.deepEqual(
      slow.votes.slice(0, 3).map((v) => v.score),
      [1, 1, 1],
    );
    assert.ok(
      slow.votes.some((v) => v.attempts === 2) || (script.calls.get('slow:false') ?? 0) >= 6,
      'the vote that timed out was retried',
    );
    assert.equal(j(a[1])!.hint, SCRIPTED_HINT);
    assert.equal(j(a[5])!.hint, SCRIPTED_HINT);
    assert.deepEqual(j(a[8])!.votes, [], 'an end marker with nothing after it costs no judge call');
    assert.equal(dlq.length, 1);
    assert.equal(dlq[0].code, 'TS_ERR_JUDGE_FAILED');
    assert.match(dlq[0].message, /TS_ERR_TIMEOUT/);

    // Samples per method. RL: reward ±1 where the score is not 0; OPD: the teacher where a hint
    // was accepted; COMBINED: either or both; every method: a masked sample for each end pair.
    assert.equal(new Set(samples.map((s) => s.sampleId)).size, samples.length, 'no duplicate sample');
    const by = (m: Sample['method']) => new Map(samples.filter((s) => s.method === m).map((s) => [s.turnId, s]));
    const rl = by('RL');
    const opd = by('OPD');
    const comb = by('COMBINED');
    const ends = [a[8], b[1], c[1]];
    assert.deepEqual(new Set(rl.keys()), new Set([a[0], a[1], a[4], b[0], c[0], ...ends]));
    assert.deepEqual(new Set(opd.keys()), new Set([a[1], a[5], c[0], ...ends]));
    assert.deepEqual(new Set(comb.keys()), new Set([a[0], a[1], a[4], a[5], b[0], c[0], ...ends]));
    assert.equal(samples.length, 23);
    assert.deepEqual(
      [a[0], a[1], a[4], b[0], c[0]].map((id) => rl.get(id)!.reward),
      [1, -1, 1, 1, -1],
    );
    for (const s of rl.values()) assert.equal(s.teacherLogprobs, null, 'RL never asks the teacher');
    for (const id of [a[1], a[5], c[0]]) {
      const s = opd.get(id)!;
      assert.equal(s.reward, 0);
      assert.equal(s.teacherLogprobs!.length, s.responseLength, 'one teacher log-prob per response token');
      assert.ok(s.teacherLogprobs!.every((x) => Number.isFinite(x) && x <= 0));
    }
    assert.deepEqual(
      [a[0], a[1], a[4], a[5], c[0]].map((id) => comb.get(id)!.reward),
      [1, -1, 1, 0, -1],
    );
    assert.deepEqual(
      [a[0], a[1], a[4], a[5], c[0]].map((id) => comb.get(id)!.teacherLogprobs !== null),
      [false, true, false, true, true],
      'score only: teacher term exactly 0',
    );
    for (const m of [rl, opd, comb]) {
      for (const id of ends)
        assert.ok(
          m.get(id)!.lossMask.every((x) => x === 0),
          'end pairs are masked',
        );
      for (const [id, s] of m) if (!ends.includes(id)) assert.ok(s.lossMask.every((x) => x === 1));
    }
    for (const s of samples) {
      const p = pair(s.turnId);
      assert.deepEqual(s.tokens, [...p.turn.promptTokenIds, ...p.turn.responseTokenIds], "the engine's own token ids, never re-tokenized");
      assert.deepEqual(s.rolloutLogprobs, p.turn.responseLogprobs);
      assert.equal(s.policyVersion, 0);
      assert.equal(s.judgeId, 'llm:scripted');
    }
    assert.ok([...rl.values()].filter((s) => s.sessionId === 'e2e-A').every((s) => s.userId === 'alice'));
  });
});
