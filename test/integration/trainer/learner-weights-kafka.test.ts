/**
 * The learner with `TURNSTREAM_WEIGHTS_TRANSPORT=kafka` (`turnstream train`, the built-in model):
 * each version's checkpoint travels on the weight-blobs topic in the version's own transaction.
 * A learner started on another home (an empty weight store) resumes from the last published
 * version, fetched through Kafka, and trains on; a gateway on a third home serves what it
 * published. Nothing is shared between the three homes.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureStack } from '../../support/stack.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';
import { family, type Family } from '../../support/topic-family.ts';
import { waitFor } from '../../support/wait-for.ts';
import { startGateway, type StartedGateway } from '../gateway/support.ts';
import { publishedVersions, spawnTrain, stopChild, tinyCheckpoint, yesNoSample } from './support.ts';

let f: Family;
let gateway: StartedGateway | undefined;
const versions = () => publishedVersions(f);

/** `turnstream train` on `weightsDir`, publishing through Kafka; stopped (SIGTERM) once `version` is published. */
async function trainUntil(weightsDir: string, version: number): Promise<void> {
  const child = await spawnTrain(f, weightsDir, { TURNSTREAM_WEIGHTS_TRANSPORT: 'kafka' });
  try {
    await waitFor(`v${version}`, async () => (await versions()).some((v) => v.version === version), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
  } finally {
    await stopChild(child, 'SIGTERM');
  }
}

before(async () => {
  f = await family('learner-weights-kafka', 2);
});

after(async () => {
  await gateway?.gw.stop();
  await f.close();
  const admin = f.kafka.admin();
  await admin.connect();
  const mine = (await admin.listTopics()).filter((t) => t.startsWith(f.prefix));
  await admin.deleteTopics({ topics: mine }).catch(() => undefined);
  await admin.disconnect();
});
// Registered after the hook above, so its folder is removed after the gateway stopped writing its outbox there.
const dir = suiteTempDir('ts-weights-');

/** An empty home folder `name`. */
const home = async (name: string): Promise<string> => {
  const path = join(dir(), name);
  await mkdir(path);
  return path;
};

test(
  'versions travel through Kafka: a learner on a new home resumes from them, a gateway on a third home serves them',
  { timeout: 400_000 },
  async () => {
    const { codecs, producer, prefix } = f;
    const send = (from: number) =>
      producer.sendAll(
        Array.from({ length: 4 }, (_, j) => yesNoSample(from + j, { sessionId: `s${(from + j) % 3}`, userId: `u${(from + j) % 4}` })).map(
          (s) => ({ id: 'samples' as const, key: s.sessionId, value: s }),
        ),
      );

    // Home A: version 1.
    const homeA = await tinyCheckpoint(dir(), 'trainer-a');
    await send(0);
    await trainUntil(homeA, 1);
    const [v1] = await versions();
    assert.equal(v1.uri, `kafka://${codecs.topic('weightBlobs')}/turnstream-tiny/1`);

    // Home B, empty: the learner fetches v1 through Kafka and trains v2 on top of it.
    const homeB = await home('trainer-b');
    await send(4);
    await trainUntil(homeB, 2);
    const all = await versions();
    assert.deepEqual(
      all.map((v) => [v.version, v.parentVersion, v.metrics.steps]),
      [
        [1, 0, 1],
        [2, 1, 2],
      ],
      'v2 was trained on v1, steps counted across the move',
    );
    assert.equal(all[1].uri, `kafka://${codecs.topic('weightBlobs')}/turnstream-tiny/2`);
    assert.deepEqual(await readdir(join(homeB, 'turnstream-tiny', 'v1')).then((files) => files.sort()), ['model.json', 'weights.bin']);

    // Home C: a gateway with its own store serves v2.
    const homeC = await home('gateway-c');
    const stack = await ensureStack();
    gateway = await startGateway({
      home: homeC,
      kafka: { brokers: stack.brokers.split(','), registryUrl: stack.registryUrl, naming: { prefix } },
    });
    await waitFor('the gateway serving v2', () => gateway!.gw.policies!.version === 2, { timeoutMs: 60_000, intervalMs: 20 });
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'turnstream-tiny', max_tokens: 4, messages: [{ role: 'user', content: 'q1' }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-policy-version'), '2');
  },
);
