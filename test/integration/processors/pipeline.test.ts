import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createEmbeddedJudge, createLlmJudge, type Teacher } from '../../../processors/index.ts';
import { startFakeOpenAI, type FakeServer } from '../../unit/processors/support/fake-openai.ts';
import { SCRIPTED_HINT, scriptedJudge } from '../../unit/processors/support/scripted-judge.ts';
import { conversation, family, pipelineCaughtUp, readAll, startStages, waitFor, type Family } from './support.ts';

const teacher: Teacher = { id: 'fake', score: async (_m, ids) => ({ logprobs: ids.map(() => -0.5) }) };

describe('assembler → judge → sample builder on Kafka', { timeout: 300_000 }, () => {
  let f: Family;
  let server: FakeServer;
  before(async () => {
    f = await family('pipeline');
    const script = scriptedJudge({ lateMs: 3000 }); // one instance for the run: tie/slow count their calls
    server = await startFakeOpenAI((r) => script(r.body));
  });
  after(async () => {
    await f?.close();
    await server?.close();
  });

  it('gives exactly the expected judgements, samples and dead letters', async () => {
    // P: 8 main turns; turn i's next state is user message i+1. The last one ends the session.
    const users = [
      'hello',
      '[[pos]] thanks',
      '[[neg]] no, too long',
      '[[garbage]] hm',
      '[[tie]] ok',
      '[[slow]] and then?',
      '[[fail]] go on',
      '[[hintonly]] fine',
      'bye',
    ];
    const p = conversation('P', users.slice(0, 8), (i) => ({ sessionDone: i === 7 }));
    // S: side turns only. U: turns the engine did not tokenize.
    const s = conversation('S', ['hb', 'hb'], () => ({ turnType: 'SIDE' }));
    const u = conversation('U', ['x', '[[pos]] y'], (i) => ({
      tokenized: false,
      promptTokenIds: [],
      responseTokenIds: [],
      responseLogprobs: [],
      sessionDone: i === 1,
    }));
    await f.producer.sendAll([...p, ...s, ...u].map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t })));

    const judge = createLlmJudge({
      baseUrl: server.baseUrl,
      model: 'scripted',
      votes: 3,
      hintVotes: 1,
      timeoutMs: 1000,
      retries: 1,
      minBackoffMs: 20,
    });
    const handles = await startStages(f, {
      assembler: { idleTimeoutMs: 600_000 },
      judge: { judge, concurrency: 4 },
      builder: { method: 'combined', teacher },
    });
    try {
      await waitFor(
        '5 samples and 1 dead letter',
        async () => (await readAll(f, 'samples')).length >= 5 && (await readAll(f, 'dlq')).length >= 1,
        120_000,
      );
      await pipelineCaughtUp(f);
      const [pairs, judgements, samples, dlq] = await Promise.all([
        readAll(f, 'pairs'),
        readAll(f, 'judgements'),
        readAll(f, 'samples'),
        readAll(f, 'dlq'),
      ]);

      // Pairs: P's 8 (the last with SESSION_DONE), U's 2, none of S.
      assert.equal(pairs.filter((x) => x.sessionId === 'P').length, 8);
      assert.equal(pairs.filter((x) => x.sessionId === 'U').length, 2);
      assert.equal(pairs.filter((x) => x.sessionId === 'S').length, 0);

      // Judgements: every P pair but the failed one; untokenized U pairs are not judged.
      const byTurn = new Map(judgements.map((j) => [j.turnId, j]));
      assert.equal(judgements.length, 7);
      const score = (i: number) => byTurn.get(p[i].turnId)?.score;
      assert.deepEqual([0, 1, 2, 3, 4, 6, 7].map(score), [1, -1, 0, 0, 1, 0, 0]);
      assert.equal(byTurn.get(p[1].turnId)!.hint, SCRIPTED_HINT);
      assert.equal(byTurn.get(p[6].turnId)!.hint, SCRIPTED_HINT);
      assert.equal(byTurn.get(p[0].turnId)!.hint, null);
      assert.equal(byTurn.get(p[0].turnId)!.votes.length, 4, '3 PRM votes + 1 hint vote');
      assert.deepEqual(
        byTurn
          .get(p[2].turnId)!
          .votes.slice(0, 3)
          .map((v) => v.score),
        [null, null, null],
      );
      const slow = byTurn.get(p[4].turnId)!.votes.slice(0, 3);
      assert.equal(slow.filter((v) => v.error?.includes('TS_ERR_TIMEOUT')).length, 0, 'the slow vote succeeded on its retry');
      assert.ok(slow.some((v) => v.attempts === 2));
      assert.deepEqual(byTurn.get(p[7].turnId)!.votes, [], 'end marker without feedback: no model call');
      assert.ok(!byTurn.has(p[5].turnId));

      // The all-failed pair went to the DLQ with its reason, never scored 0.
      assert.equal(dlq.length, 1);
      assert.equal(dlq[0].code, 'TS_ERR_JUDGE_FAILED');
      assert.equal(dlq[0].stage, 'judge');
      assert.match(dlq[0].message, /HTTP 500/);

      // Samples: t0 reward 1; t1 reward −1 + teacher; t4 reward 1; t6 teacher only; t7 masked.
      const sample = (i: number) => samples.find((x) => x.turnId === p[i].turnId);
      assert.equal(samples.length, 5);
      assert.deepEqual(
        [0, 1, 4, 6, 7].map((i) => sample(i)?.reward),
        [1, -1, 1, 0, 0],
      );
      assert.equal(sample(0)!.teacherLogprobs, null);
      assert.deepEqual(sample(1)!.teacherLogprobs, [-0.5, -0.5, -0.5]);
      assert.deepEqual(sample(6)!.teacherLogprobs, [-0.5, -0.5, -0.5]);
      assert.deepEqual(sample(7)!.lossMask, [0, 0, 0]);
      assert.deepEqual(sample(0)!.lossMask, [1, 1, 1]);
      for (const x of samples) {
        assert.equal(x.sampleId, `${x.turnId}:COMBINED`);
        assert.equal(x.policyVersion, 0);
        assert.equal(x.policyModelId, 'turnstream-tiny');
        assert.equal(x.userId, 'alice');
        assert.equal(x.sessionId, 'P');
        assert.equal(x.judgeId, 'llm:scripted');
      }
      assert.equal(new Set(samples.map((x) => x.sampleId)).size, 5);
    } finally {
      await Promise.all(handles.map((h) => h.stop()));
    }
  });

  it('the embedded judge (no model server) turns a correction into a combined sample with a hint', async () => {
    const g = await family('pipeline-embedded');
    try {
      const turns = conversation('E', ['hi', 'Thanks, that works 👍', "No, that's too long. Call me Bob.", 'bye'], (i) => ({
        sessionDone: i === 3,
      }));
      await g.producer.sendAll(turns.map((t) => ({ id: 'turns' as const, key: 'E', value: t })));
      const handles = await startStages(g, { judge: { judge: createEmbeddedJudge() }, builder: { method: 'combined', teacher } });
      try {
        // t0 → 👍 thanks (1); t1 → correction (−1 + hint); t2 → "bye" (0, no sample); t3 → masked end.
        await waitFor('3 samples', async () => (await readAll(g, 'samples')).length >= 3);
        await pipelineCaughtUp(g);
        const [judgements, samples] = await Promise.all([readAll(g, 'judgements'), readAll(g, 'samples')]);
        const j = (i: number) => judgements.find((x) => x.turnId === turns[i].turnId)!;
        assert.equal(judgements.length, 4);
        assert.deepEqual(
          [0, 1, 2, 3].map((i) => j(i).score),
          [1, -1, 0, 0],
        );
        assert.equal(j(1).hint, 'Keep the answer short. Call me Bob.');
        assert.equal(j(1).judgeId, 'embedded');
        assert.equal(samples.length, 3);
        const s1 = samples.find((x) => x.turnId === turns[1].turnId)!;
        assert.equal(s1.reward, -1);
        assert.deepEqual(s1.teacherLogprobs, [-0.5, -0.5, -0.5]);
        assert.deepEqual(samples.find((x) => x.turnId === turns[3].turnId)!.lossMask, [0, 0, 0]);
      } finally {
        await Promise.all(handles.map((h) => h.stop()));
      }
    } finally {
      await g.close();
    }
  });
});
