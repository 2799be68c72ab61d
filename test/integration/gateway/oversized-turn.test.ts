/**
 * One large request must not stop capture (issue 13): a 3,000,000-character message followed
 * by normal traffic reaches the real turns topic, the large turn shrunk by the documented rule
 * and kept whole on disk; and an outbox left with a record Kafka refuses (written by an older
 * gateway) is drained past it: the record is dead-lettered, everything behind it delivered.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import kafkajs from '../../../streams/kafkajs.ts';
import { test } from 'node:test';
import { TOPICS, type Turn } from '../../../schemas/index.ts';
import { ensureTopics } from '../../../streams/index.ts';
import { suiteGatewayHomes } from '../../support/kafka-gateway.ts';
import { exampleTurn } from '../../support/fixtures.ts';
import { startGateway, TopicCollector, TINY } from './support.ts';

const gatewayHome = suiteGatewayHomes();

async function chat(url: string, content: string, session: string): Promise<{ status: number; turnId: string; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 4 }),
  });
  await res.text();
  return { status: res.status, turnId: res.headers.get('x-turn-id') ?? '', ms: Date.now() - t0 };
}

test('a 3 MB message, then normal traffic: every turn reaches the topic within seconds; the large one shrunk, recorded and kept whole', async () => {
  const { home, k } = await gatewayHome('oversized');
  const { gw, url } = await startGateway({
    home: home.dir,
    kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming },
    builtin: { weightsDir: join(home.dir, 'weights'), initConfig: TINY, followWeights: false },
  });
  const collector = await TopicCollector.start(k.kafka, k.codecs, 'turns');
  try {
    // The topic carries the limit the gateway sizes turns against.
    const admin = k.kafka.admin();
    await admin.connect();
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: k.codecs.topic('turns'), configNames: ['max.message.bytes'] }],
    });
    await admin.disconnect();
    assert.equal(Number(resources[0].configEntries[0].configValue), TOPICS.turns.maxMessageBytes);

    const big = `START ${'0123456789'.repeat(300_000)} FINISH`;
    const first = await chat(url, big, 's-big');
    assert.equal(first.status, 200);
    const t0 = Date.now();
    const normal = [];
    for (let i = 0; i < 5; i++) normal.push(await chat(url, `normal ${i}`, 's-normal'));
    for (const r of normal) assert.equal(r.status, 200);
    const events = await collector.waitFor(6, 30_000, 1500);
    const seconds = (Date.now() - t0) / 1000;
    assert.deepEqual(events.map((e) => e.value.turnId).sort(), [first.turnId, ...normal.map((r) => r.turnId)].sort(), 'each turn once');
    assert.ok(seconds < 15, `captured within seconds (${seconds.toFixed(1)} s)`);
    assert.equal(gw.outbox.depth, 0);

    const shrunk = events.find((e) => e.value.turnId === first.turnId)!.value;
    const content = shrunk.requestMessages.at(-1)!.content!;
    assert.ok(content.startsWith('START 0123') && content.endsWith('789 FINISH'), 'head and tail kept');
    assert.ok(shrunk.truncation, 'the truncation is recorded in the Turn');
    assert.equal(shrunk.truncation!.truncatedFields, 1);
    assert.ok(shrunk.truncation!.originalBytes > 3_000_000);
    const whole = JSON.parse((await promisify(gunzip)(await readFile(shrunk.truncation!.keptIn!))).toString('utf8')) as Turn;
    assert.equal(whole.requestMessages.at(-1)!.content, big, 'kept whole on the gateway');
    for (const e of events.filter((x) => x.value.turnId !== first.turnId)) assert.equal(e.value.truncation, null);
  } finally {
    await collector.stop();
    await gw.stop();
  }
});

test('an outbox holding a record Kafka refuses (left by an older gateway) is drained past it: dead-lettered, the rest delivered in order', async () => {
  const { home, k } = await gatewayHome('refused');
  const builtin = { weightsDir: join(home.dir, 'weights'), initConfig: TINY, followWeights: false };
  // An offline gateway; the record goes straight into its outbox, as an older version put it there.
  const offline = await startGateway({ home: home.dir, builtin, drainOnStopMs: 0 });
  const poison = exampleTurn({
    turnId: 'poison-turn',
    sessionId: 's-refused',
    requestMessages: [{ role: 'user', content: 'z'.repeat(2_000_000), name: null, toolCallId: null, toolCalls: [] }],
  });
  await offline.gw.outbox.append('turns', poison.sessionId, poison);
  const before: string[] = [];
  for (let i = 0; i < 3; i++) before.push((await chat(offline.url, `after ${i}`, 's-refused')).turnId);
  await offline.gw.stop();

  await ensureTopics(k.kafka, { naming: k.naming, partitions: 3, ids: ['dlq'] });
  const turns = await TopicCollector.start(k.kafka, k.codecs, 'turns');
  const dlq = await TopicCollector.start(k.kafka, k.codecs, 'dlq');
  const { gw, url } = await startGateway({
    home: home.dir,
    builtin,
    kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming },
  });
  try {
    const later = (await chat(url, 'later', 's-refused')).turnId;
    const got = await turns.waitFor(4, 30_000, 1500);
    assert.deepEqual(
      got.map((e) => e.value.turnId),
      [...before, later],
      'everything behind the refused record, in order, once',
    );
    const dead = await dlq.waitFor(1, 30_000, 500);
    assert.equal(dead.length, 1);
    assert.deepEqual(
      [dead[0].value.code, dead[0].value.stage, dead[0].value.topic],
      ['TS_ERR_TOO_LARGE', 'gateway-outbox', k.codecs.topic('turns')],
    );
    assert.match(dead[0].value.message, /dead-letters\.jsonl/);
    const kept = (await readFile(join(home.dir, 'outbox', 'dead-letters.jsonl'), 'utf8')).trim().split('\n');
    assert.equal(JSON.parse(kept[0]).value.turnId, 'poison-turn', 'the refused record is kept whole');
    assert.equal(gw.outbox.stats().deadLettered, 1);
    const ready = (await (await fetch(`${url}/readyz`)).json()) as { status: string; outboxDeadLetters: number };
    assert.deepEqual([ready.status, ready.outboxDeadLetters], ['ready', 1]);
  } finally {
    await turns.stop();
    await dlq.stop();
    await gw.stop();
  }
});
