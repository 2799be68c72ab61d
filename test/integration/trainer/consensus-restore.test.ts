/**
 * The user consensus survives a learner restart: the samples the group had committed are folded
 * back in on start, so an adversary found before the restart does not get the prior weight back.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Sample } from '../../../schemas/index.ts';
import { createLogger } from '../../../core/index.ts';
import { startLearner, type LearnerHandle } from '../../../trainer/index.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';
import { family } from '../../support/topic-family.ts';
import { waitFor } from '../../support/wait-for.ts';
import { chatSample, TINY, tinyCheckpoint } from './support.ts';

const TOPICS = ['tea', 'sleep', 'rain', 'bread', 'chess', 'music', 'gravity', 'rome', 'primes', 'kafka', 'clouds', 'maps'];
const shortReply = (i: number, t: string) => [`Sure: ${t}.`, `It is ${t}.`, `${t}, done.`, `Yes, ${t}.`][i % 4];
const longReply = (i: number, t: string) =>
  `Well, there is quite a lot to say about ${t}. First, consider the background of ${t} and why people care. Then ${i + 2} details.`;

const sample = (n: number, userId: string, ask: string, reply: string, reward: number): Sample =>
  chatSample(`c${n}`, ask, reply, { sessionId: `${userId}-${n}`, userId, reward });

const handles: LearnerHandle[] = [];
after(async () => {
  for (const h of handles) await h.stop().catch(() => undefined);
});
const dir = suiteTempDir('ts-consensus-restore-');

test(
  'a restarted learner folds the committed samples back into the consensus: the adversary keeps its low weight',
  { timeout: 300_000 },
  async () => {
    // A prompt and a long reply take well over TINY's 48 byte tokens.
    const weightsDir = await tinyCheckpoint(dir(), 'weights', { ...TINY, contextLength: 160 });
    // Private chats: ann, bob and cid reward short replies and punish long ones; eve the opposite.
    const samples: Sample[] = [];
    let n = 0;
    for (let r = 0; r < 6; r++) {
      for (const u of ['ann', 'bob', 'cid', 'eve']) {
        const t = TOPICS[(n * 7) % TOPICS.length];
        const likesShort = u !== 'eve';
        samples.push(sample(n++, u, `${u}: tell me about ${t} (${r})`, shortReply(n, t), likesShort ? 1 : -1));
        samples.push(sample(n++, u, `${u}: more on ${t} please (${r})`, longReply(n, t), likesShort ? -1 : 1));
      }
    }
    const { kafka, codecs, producer, close } = await family('consensus-restore', 3, { logger: createLogger('kafka', 'error') });
    await producer.sendAll(samples.map((s) => ({ id: 'samples' as const, key: s.sessionId, value: s })));
    await close();

    const options = {
      kafka,
      codecs,
      weightsDir,
      logger: createLogger('learner', 'warn'),
      batch: { batchSize: 8, maxWaitMs: 1000, maxStaleness: 1000, maxUserShare: 1 },
    };
    const first = await startLearner(options);
    handles.push(first);
    await first.ready;
    await waitFor(
      `all ${samples.length} samples trained or dropped`,
      () => first.stats().trained + first.stats().droppedStale >= samples.length,
      {
        timeoutMs: 240_000,
        intervalMs: 250,
      },
    );
    const before = first.userWeights();
    await first.stop();
    assert.ok(before.eve < 0.6 && before.ann > 0.8, `the adversary was found before the restart: ${JSON.stringify(before)}`);

    const second = await startLearner(options);
    handles.push(second);
    await second.ready;
    assert.equal(second.stats().consensusRestored, samples.length, 'every committed sample is folded back in');
    assert.equal(second.stats().trained, 0, 'and none is trained again');
    const after = second.userWeights();
    for (const u of ['ann', 'bob', 'cid', 'eve'])
      assert.ok(Math.abs(after[u] - before[u]) < 0.1, `${u}: ${before[u]} before, ${after[u]} after`);
    assert.ok(after.eve < 0.6, `the adversary keeps a low weight: ${after.eve}`);
    await second.stop();
  },
);
