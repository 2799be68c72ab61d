/**
 * `turnstream dlq` on real Kafka and the real registry: a judge that is down dead-letters a pair;
 * once it is back, `dlq replay` re-sends the pair to the pairs topic and it becomes a judgement
 * and a sample, once; a second replay re-sends nothing. Bad input is one line and exit code 2.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLlmJudge } from '../../../processors/index.ts';
import type { ProcessorHandle } from '../../../streams/index.ts';
import { chat, startFakeOpenAI, type FakeServer } from '../../unit/processors/support/fake-openai.ts';
import {
  conversation,
  family,
  pipelineCaughtUp,
  readAll,
  spawnTurnstream,
  startStages,
  waitFor,
  type Family,
} from '../processors/support.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `turnstream dlq ARGS` on the family's topics, to its end. */
async function dlq(f: Family, args: string[]): Promise<Run> {
  const child = await spawnTurnstream(f, ['dlq', ...args]);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => void (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => void (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

interface LetterJson {
  id: string;
  stage: string;
  code: string;
  topic: string;
  replayed_at: string | null;
  reason?: string;
}

describe(
  'turnstream dlq: a pair dead-lettered by a judge that was down reaches a sample once the judge is back',
  { timeout: 300_000 },
  () => {
    let f: Family;
    let judgeServer: FakeServer;
    let judgeDown = true;
    let services: ProcessorHandle[] = [];
    before(async () => {
      f = await family('dlq');
      judgeServer = await startFakeOpenAI(() => (judgeDown ? { status: 500, body: 'judge down' } : chat('The user moved on. \\boxed{1}')));
      const judge = createLlmJudge({
        baseUrl: judgeServer.baseUrl,
        model: 'scripted',
        votes: 1,
        timeoutMs: 1000,
        retries: 1,
        minBackoffMs: 20,
      });
      services = await startStages(f, {
        assembler: { idleTimeoutMs: 600_000 },
        judge: { judge, concurrency: 2 },
        builder: { method: 'rl' },
      });
    });
    after(async () => {
      await Promise.all(services.map((s) => s.stop()));
      await judgeServer?.close();
      await f?.close();
    });

    it('lists the letter, refuses bad input, re-sends it once, and a second replay sends nothing', async () => {
      // Turn 0's next state is the user's reply (the judge is asked); turn 1 ends the session
      // (an end marker without feedback is judged without a call).
      const turns = conversation('D', ['hello', 'thanks, that helps'], (i) => ({ sessionDone: i === 1 }));
      await f.producer.sendAll(turns.map((t) => ({ id: 'turns' as const, key: t.sessionId, value: t })));
      await waitFor('the failed pair dead-lettered and the end marker sampled', async () => {
        const [letters, samples] = await Promise.all([readAll(f, 'dlq'), readAll(f, 'samples')]);
        return letters.length >= 1 && samples.length >= 1;
      });
      await pipelineCaughtUp(f);
      const samplesOf = async (turnId: string) => (await readAll(f, 'samples')).filter((s) => s.turnId === turnId);
      assert.equal((await samplesOf(turns[0].turnId)).length, 0, 'no sample while the judge is down');

      const listed = await dlq(f, ['list', '--json']);
      assert.equal(listed.code, 0, listed.stderr);
      const letters = (JSON.parse(listed.stdout) as { letters: LetterJson[] }).letters;
      assert.deepEqual(
        letters.map((l) => [l.stage, l.code, l.topic, l.replayed_at]),
        [['judge', 'TS_ERR_JUDGE_FAILED', f.codecs.topic('pairs'), null]],
      );

      // Bad input: one line on stderr, exit code 2, nothing sent.
      for (const [args, message] of [
        [['replay'], /^turnstream: name the letters to re-send: ids, a filter .* or --all \(TS_ERR_INVALID_INPUT\)$/],
        [
          ['list', '--code', 'TS_ERR_NOPE'],
          /^turnstream: --code must be an error code \(.*\); got "TS_ERR_NOPE" \(TS_ERR_INVALID_INPUT\)$/,
        ],
        [['show', 'abcdef0'], /^turnstream: no dead letter has the id abcdef0 .*\(TS_ERR_INVALID_INPUT\)$/],
      ] as const) {
        const r = await dlq(f, [...args]);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
        assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
        assert.match(r.stderr.trim(), message);
      }

      // The cause fixed: the judge answers again.
      judgeDown = false;
      const replayed = await dlq(f, ['replay', '--stage', 'judge', '--json']);
      assert.equal(replayed.code, 0, replayed.stderr);
      const first = JSON.parse(replayed.stdout) as { replayed: LetterJson[]; skipped: LetterJson[] };
      assert.deepEqual(
        first.replayed.map((l) => l.id),
        [letters[0].id],
      );
      assert.deepEqual(first.skipped, []);

      await waitFor('the re-sent pair judged and sampled', async () => (await samplesOf(turns[0].turnId)).length >= 1);
      // Run again: the marker written with the re-sent record keeps it from going out twice.
      const again = await dlq(f, ['retry', letters[0].id.slice(0, 8), '--json']);
      assert.equal(again.code, 0, again.stderr);
      const second = JSON.parse(again.stdout) as { replayed: LetterJson[]; skipped: LetterJson[] };
      assert.deepEqual(second.replayed, []);
      assert.deepEqual(
        second.skipped.map((l) => [l.id, l.reason]),
        [[letters[0].id, 'already replayed']],
      );

      await pipelineCaughtUp(f);
      const [samples, judgements, dead, pairs] = await Promise.all([
        samplesOf(turns[0].turnId),
        readAll(f, 'judgements'),
        readAll(f, 'dlq'),
        readAll(f, 'pairs'),
      ]);
      assert.equal(samples.length, 1, 'one sample of the re-sent pair');
      assert.equal(samples[0].reward, 1);
      assert.equal(judgements.filter((j) => j.turnId === turns[0].turnId).length, 1, 'judged once');
      assert.equal(pairs.filter((p) => p.turn.turnId === turns[0].turnId).length, 2, 'the original pair and its one re-send');
      assert.equal(dead.length, 1, 'no new dead letter');
      const after = JSON.parse((await dlq(f, ['list', '--json'])).stdout) as { letters: LetterJson[] };
      assert.ok(after.letters[0].replayed_at !== null, 'listed as re-sent');
    });
  },
);
