/**
 * `kill -9` of each processor in the middle of a stream, then a restart: every stage's output
 * (read_committed) is exact — nothing lost, nothing doubled. Each processor runs as the real
 * command, `turnstream process <name> --instance 0`, in a child process; input keeps arriving
 * while it is dead, as live traffic does.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import type { ChildProcess } from 'node:child_process';
import type { Judgement, TurnPair } from '../../../schemas/index.ts';
import type { OutgoingEvent } from '../../../streams/index.ts';
import { chat, startFakeOpenAI } from '../../unit/processors/support/fake-openai.ts';
import { exampleFeedback, exampleJudgement, examplePair } from '../../support/fixtures.ts';
import { caughtUpOn, conversation, family, kill9, produceSteadily, readAll, spawnProcessor, waitFor, type Family } from './support.ts';

const children: ChildProcess[] = [];
const families: Family[] = [];
after(async () => {
  for (const c of children) await kill9(c);
  for (const f of families) await f.close();
});

/** Runs `name` over `events` (sent steadily), SIGKILLs it once `midway(count)`, restarts it, waits for `expected` outputs. */
async function killAndRestart<K extends 'pairs' | 'judgements' | 'samples'>(
  f: Family,
  name: string,
  env: Record<string, string>,
  events: OutgoingEvent[],
  output: K,
  killAt: number,
  expected: number,
): Promise<{ before: number; outputs: Awaited<ReturnType<typeof readAll<K>>> }> {
  const first = await spawnProcessor(f, name, env);
  children.push(first);
  const sending = produceSteadily(f, events, Math.ceil(events.length / 12), 400);
  await waitFor(`${killAt} ${output} committed`, async () => (await readAll(f, output)).length >= killAt, 60_000);
  await kill9(first);
  const before = (await readAll(f, output)).length;
  const second = await spawnProcessor(f, name, env);
  children.push(second);
  await sending;
  await waitFor(`all ${expected} ${output}`, async () => (await readAll(f, output)).length >= expected, 120_000);
  await caughtUpOn(f, name, [...new Set(events.map((e) => e.id))]);
  const outputs = await readAll(f, output);
  second.kill('SIGTERM');
  await new Promise((r) => second.once('exit', r));
  return { before, outputs };
}

describe('kill -9 of a processor mid-stream, then restart: exact outputs', { timeout: 400_000 }, () => {
  it('session-assembler: every main turn paired once; feedback read after the next turn still in its pair', async () => {
    const f = await family('kill9-assembler');
    families.push(f);
    const SESSIONS = 24;
    const TURNS = 10;
    const t0 = Date.now();
    const sessions = Array.from({ length: SESSIONS }, (_, s) =>
      conversation(
        `k${s}`,
        Array.from({ length: TURNS }, (_, i) => `message ${i}`),
        (i) => ({ requestedAt: t0 + i * 400, completedAt: t0 + i * 400 + 5, sessionDone: i === TURNS - 1 }),
      ),
    );
    // Round i: turn i of every session; after turn 4, a 👎 on turn 3 (read after the next turn).
    const events: OutgoingEvent[] = [];
    for (let i = 0; i < TURNS; i++) {
      for (const turns of sessions) events.push({ id: 'turns', key: turns[i].sessionId, value: turns[i] });
      if (i === 4) {
        for (const turns of sessions) {
          const fb = exampleFeedback({
            feedbackId: randomUUID(),
            sessionId: turns[3].sessionId,
            turnId: turns[3].turnId,
            rating: -1,
            text: 'no',
            createdAt: turns[4].completedAt + 50,
          });
          events.push({ id: 'feedback', key: fb.sessionId, value: fb });
        }
      }
    }
    const { before, outputs: pairs } = await killAndRestart(
      f,
      'session-assembler',
      { FEEDBACK_GRACE_MS: '1500' },
      events,
      'pairs',
      40,
      SESSIONS * TURNS,
    );
    assert.ok(before < SESSIONS * TURNS, `killed mid-stream (${before} pairs committed then)`);
    assert.equal(pairs.length, SESSIONS * TURNS);
    assert.deepEqual(new Set(pairs.map((p) => p.pairId)), new Set(sessions.flat().map((t) => t.turnId)));
    for (const turns of sessions) {
      const mine = pairs.filter((p) => p.sessionId === turns[0].sessionId).sort((a, b) => a.turn.mainTurnIndex - b.turn.mainTurnIndex);
      assert.deepEqual(
        mine.map((p) => p.turn.mainTurnIndex),
        [...Array(TURNS).keys()],
      );
      assert.equal(mine.at(-1)!.endMarker, 'SESSION_DONE');
      assert.deepEqual(
        mine.map((p) => p.feedback.length),
        [0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
        `${turns[0].sessionId}: the late 👎 is in turn 3's pair`,
      );
    }
    assert.equal((await readAll(f, 'dlq')).length, 0);
  });

  it('judge (LLM judge with latency): one judgement per pair', async () => {
    const f = await family('kill9-judge');
    families.push(f);
    const server = await startFakeOpenAI(() => ({ delayMs: 100, ...chat('The user moved on. \\boxed{1}') }));
    try {
      const pairs: TurnPair[] = Array.from({ length: 240 }, (_, i) => {
        const p = examplePair({ sessionId: `s${i % 16}` });
        return { ...p, pairId: randomUUID(), turn: { ...p.turn } };
      });
      for (const p of pairs) p.turn.turnId = p.pairId;
      const events: OutgoingEvent[] = pairs.map((p) => ({ id: 'pairs', key: p.sessionId, value: p }));
      const env = { JUDGE_BASE_URL: server.baseUrl, JUDGE_MODEL: 'fake', JUDGE_VOTES: '3', TRAIN_METHOD: 'rl', JUDGE_TIMEOUT_MS: '10000' };
      const { before, outputs } = await killAndRestart(f, 'judge', env, events, 'judgements', 30, pairs.length);
      assert.ok(before < pairs.length, `killed mid-stream (${before} judgements committed then)`);
      assert.equal(outputs.length, pairs.length);
      assert.equal(new Set(outputs.map((j) => j.judgementId)).size, pairs.length, 'no duplicate judgement');
      assert.deepEqual(new Set(outputs.map((j) => j.turnId)), new Set(pairs.map((p) => p.pairId)));
      assert.ok(outputs.every((j) => j.score === 1 && j.votes.length === 3 && j.judgeId === 'llm:fake'));
      assert.equal((await readAll(f, 'dlq')).length, 0);
    } finally {
      await server.close();
    }
  });

  it('sample-builder: one sample per judgement that trains (RL), none for score 0', async () => {
    const f = await family('kill9-samples');
    families.push(f);
    const judgements: Judgement[] = Array.from({ length: 400 }, (_, i) => {
      const base = exampleJudgement();
      const turnId = randomUUID();
      const pair = { ...base.pair, pairId: turnId, sessionId: `s${i % 16}`, turn: { ...base.pair.turn, turnId } };
      return { ...base, judgementId: `${turnId}:embedded`, turnId, sessionId: pair.sessionId, pair, score: [1, -1, 1, 0][i % 4] };
    });
    const events: OutgoingEvent[] = judgements.map((j) => ({ id: 'judgements', key: j.turnId, value: j }));
    const trained = judgements.filter((j) => j.score !== 0);
    const { before, outputs } = await killAndRestart(f, 'sample-builder', { TRAIN_METHOD: 'rl' }, events, 'samples', 40, trained.length);
    assert.ok(before < trained.length, `killed mid-stream (${before} samples committed then)`);
    assert.equal(outputs.length, trained.length);
    assert.equal(new Set(outputs.map((s) => s.sampleId)).size, trained.length, 'no duplicate sample');
    assert.deepEqual(new Set(outputs.map((s) => s.turnId)), new Set(trained.map((j) => j.turnId)));
    const reward = new Map(trained.map((j) => [j.turnId, j.score]));
    assert.ok(outputs.every((s) => s.method === 'RL' && s.reward === reward.get(s.turnId)));
  });
});
