/**
 * A new WeightVersion published on the weights topic is served by the following requests,
 * with no failed request during the swap; a version whose sha256 does not match is refused
 * and the current one keeps serving.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EventProducer } from '../../../streams/index.ts';
import { ByteTokenizer, saveCheckpoint, TransformerModel } from '../../../policy/index.ts';
import { exampleWeightVersion } from '../../support/fixtures.ts';
import { TINY } from './support.ts';
import { startKafkaGateway, type KafkaGateway } from '../../support/kafka-gateway.ts';
import { waitFor } from '../../support/wait-for.ts';

let g: KafkaGateway;
let producer: EventProducer;

before(async () => {
  g = await startKafkaGateway('swap');
  producer = new EventProducer(g.k.kafka, g.k.codecs);
  await producer.connect();
});

after(async () => {
  await producer?.disconnect();
  await g?.stop();
});

async function call(i: number): Promise<{ status: number; version: number | null }> {
  const stream = i % 2 === 0;
  const res = await fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': `swap-${i % 3}` },
    body: JSON.stringify({ messages: [{ role: 'user', content: `q${i}` }], max_tokens: 8, stream }),
  });
  const text = await res.text();
  if (stream && !text.trimEnd().endsWith('data: [DONE]')) return { status: 599, version: null };
  if (stream && text.includes('"error"')) return { status: 598, version: null };
  const v = res.headers.get('x-policy-version');
  return { status: res.status, version: v === null ? null : Number(v) };
}

test('a published WeightVersion is hot-swapped in with no failed request, and a corrupt one is refused', async () => {
  assert.equal(g.gw.policies!.version, 0);
  const weightsDir = `${g.home.dir}/weights`;
  const model = TransformerModel.init({ ...TINY, vocabSize: new ByteTokenizer().vocabSize }, 1);
  const saved = await saveCheckpoint(model, { weightsDir, modelId: 'turnstream-tiny', version: 1, parentVersion: 0 });
  model.dispose();

  // Traffic from 3 concurrent clients throughout the swap.
  let stop = false;
  const results: Array<{ status: number; version: number | null; startedAt: number }> = [];
  const clients = [0, 1, 2].map(async (c) => {
    for (let i = c; !stop; i += 3) {
      const startedAt = Date.now();
      results.push({ ...(await call(i)), startedAt });
    }
  });
  await waitFor('traffic on version 0, a request from each client', () => results.length >= 3);
  const publishedAt = Date.now();
  await producer.send(
    'weights',
    'turnstream-tiny',
    exampleWeightVersion({ version: 1, uri: saved.uri, sha256: saved.sha256, createdAt: publishedAt }),
  );
  await waitFor('version 1 to be served', () => (g.gw.policies!.version as number) === 1, { timeoutMs: 30_000 });
  const swappedAt = Date.now();
  assert.equal(g.gw.policies!.version, 1, 'version 1 is served');
  await waitFor('three requests started after the swap answered', () => results.filter((r) => r.startedAt > swappedAt).length >= 3);

  // A version whose checkpoint does not match its sha256 is refused.
  const m2 = TransformerModel.init({ ...TINY, vocabSize: new ByteTokenizer().vocabSize }, 2);
  const saved2 = await saveCheckpoint(m2, { weightsDir, modelId: 'turnstream-tiny', version: 2, parentVersion: 1 });
  m2.dispose();
  await producer.send('weights', 'turnstream-tiny', exampleWeightVersion({ version: 2, uri: saved2.uri, sha256: 'f'.repeat(64) }));
  await waitFor('the corrupt version 2 to be refused', () => g.gw.policies!.loadFailures >= 1);
  stop = true;
  await Promise.all(clients);

  console.log(`# swap: ${results.length} requests, swap ${swappedAt - publishedAt} ms after publish`);
  assert.ok(results.length >= 6);
  assert.deepEqual(
    results.filter((r) => r.status !== 200),
    [],
    'no request failed during the swap',
  );
  // In-flight requests finish on the version they started with; the ones started after the swap get v1.
  const later = results.filter((r) => r.startedAt > swappedAt && r.version !== null);
  assert.ok(later.length > 0);
  assert.deepEqual(
    later.map((r) => r.version),
    later.map(() => 1),
    'requests after the swap are answered by version 1',
  );
  assert.ok(
    results.some((r) => r.version === 0),
    'version 0 served before the swap',
  );
  assert.equal(g.gw.policies!.version, 1, 'the corrupt version 2 was not installed');
  assert.ok(g.gw.policies!.loadFailures >= 1);
  const metrics = await (await fetch(`${g.url}/metrics`)).text();
  assert.match(metrics, /turnstream_gateway_policy_version\{[^}]*model_id="turnstream-tiny"[^}]*\} 1/);
});
