/**
 * The user consensus survives a learner restart: the samples the group had committed are folded
 * back in on start, so an adversary found before the restart does not get the prior weight back.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Sample } from '../../../schemas/index.ts';
import { createEventCodecs, createKafka, ensureTopics, EventProducer } from '../../../streams/index.ts';
import { createLogger } from '../../../core/index.ts';
import { ByteTokenizer, initCheckpoint } from '../../../policy/index.ts';
import { startLearner, type LearnerHandle } from '../../../trainer/index.ts';
import { exampleSample } from '../../support/fixtures.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';
import { waitFor } from '../../support/wait-for.ts';

const tok = new ByteTokenizer();
const TOPICS = ['tea', 'sleep', 'rain', 'bread', 'chess', 'music', 'gravity', 'rome', 'primes', 'kafka', 'clouds', 'maps'];
const shortReply = (i: number, t: string) => [`Sure: ${t}.`, `It is ${t}.`, `${t}, done.`, `Yes, ${t}.`][i % 4];
const longReply = (i: number, t: string) =>
  `Well, there is quite a lot to say about ${t}. First, consider the background of ${t} and why people care. Then ${i + 2} details.`;

function sample(n: number, userId: string, ask: string, reply: string, reward: number): Sample {
  const prompt = [tok.bos, tok.user, ...tok.encode(ask), tok.end, tok.assistant];
  const resp = [...tok.encode(reply), tok.end];
  return exampleSample({
    sampleId: `c${n}:RL`,
    turnId: `c${n}`,
    sessionId: `${userId}-${n}`,
    userId,
    method: 'RL',
    tokens: [...prompt, ...resp],
    promptLength: prompt.length,
    responseLength: resp.length,
    lossMask: resp.map(() => 1),
    rolloutLogprobs: resp.map(() => -5),
    reward,
    teacherLogprobs: null,
    teacherTopK: null,
  });
}

let dir: string;
const handles: LearnerHandle[] = [];
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-consensus-restore-'));
});
after(async () => {
  for (const h of handles) await h.stop().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

test(
  'a restarted learner folds the committed samples back into the consensus: the adversary keeps its low weight',
  { timeout: 300_000 },
  async () => {
    const stack = await ensureStack();
    const kafka = createKafka({
      brokers: stack.brokers.split(','),
      clientId: 'consensus-restore-test',
      logger: createLogger('kafka', 'error'),
    });
    const prefix = uniquePrefix('consensus-restore');
    await ensureTopics(kafka, { naming: { prefix }, partitions: 3 });
    const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
    const weightsDir = join(dir, 'weights');
    await initCheckpoint(weightsDir, {
      modelId: 'turnstream-tiny',
      config: { contextLength: 160, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 },
    });

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
    const producer = new EventProducer(kafka, codecs);
    await producer.connect();
    await producer.sendAll(samples.map((s) => ({ id: 'samples' as const, key: s.sessionId, value: s })));
    await producer.disconnect();

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
