/**
 * Kafka down must never fail or stall a chat request, and every turn must reach the topic
 * exactly once when Kafka is back: (1) an outage in the middle of traffic, through a TCP
 * proxy the test stops and restarts; (2) a gateway that never reached Kafka, stopped with
 * turns in its outbox, and a new gateway on the same outbox that drains them.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { suiteGatewayHomes } from '../../support/kafka-gateway.ts';
import { startGateway, TopicCollector } from './support.ts';
import { TcpProxy } from './tcp-proxy.ts';
import { waitFor } from '../../support/wait-for.ts';

const gatewayHome = suiteGatewayHomes();

async function chat(
  url: string,
  i: number,
  session: string,
  stream = false,
): Promise<{ status: number; turnId: string | null; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: JSON.stringify({ messages: [{ role: 'user', content: `message ${i}` }], max_tokens: 6, stream }),
  });
  await res.text();
  return { status: res.status, turnId: res.headers.get('x-turn-id'), ms: Date.now() - t0 };
}

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

test('Kafka cut mid-traffic: every request answered, every turn on the topic exactly once after it is back', async () => {
  const { home, k } = await gatewayHome('outage');
  const [host, port] = k.brokers[0].split(':');
  const proxy = new TcpProxy(host, Number(port));
  await proxy.start();
  const { gw, url } = await startGateway({
    home: home.dir,
    kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming, kafka: proxy.kafka('gateway-outage') },
    builtin: {
      weightsDir: `${home.dir}/weights`,
      initConfig: { contextLength: 128, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 },
      followWeights: false,
    },
  });
  const collector = await TopicCollector.start(k.kafka, k.codecs, 'turns');
  try {
    const ids: string[] = [];
    const up = [];
    for (let i = 0; i < 5; i++) up.push(await chat(url, i, 's-outage', i % 2 === 1));
    await waitFor('the first turns to drain', () => gw.outbox.depth === 0, { timeoutMs: 30_000 });

    await proxy.stop();
    const down = [];
    for (let i = 5; i < 15; i++) down.push(await chat(url, i, 's-outage', i % 2 === 1));
    // Concurrent ones too.
    down.push(...(await Promise.all([15, 16, 17, 18, 19].map((i) => chat(url, i, 's-outage', i % 2 === 0)))));
    for (const r of [...up, ...down]) {
      assert.equal(r.status, 200);
      ids.push(r.turnId!);
    }
    assert.ok(gw.outbox.depth > 0, 'turns wait in the outbox while Kafka is unreachable');
    const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];
    const upMs = up.map((r) => r.ms);
    const downMs = down.slice(0, 10).map((r) => r.ms);
    console.log(
      `# latency with Kafka up p50=${p(upMs, 0.5)}ms max=${Math.max(...upMs)}ms; down p50=${p(downMs, 0.5)}ms max=${Math.max(...downMs)}ms; outbox depth ${gw.outbox.depth}`,
    );
    assert.ok(Math.max(...downMs) < 3000, 'no request waits on Kafka');

    await proxy.start();
    await waitFor('the outbox to drain after Kafka is back', () => gw.outbox.depth === 0, { timeoutMs: 60_000 });
    const events = await collector.waitFor(ids.length, 60_000, 2500);
    const got = events.map((e) => e.value.turnId);
    assert.equal(got.length, ids.length, 'no duplicates');
    assert.deepEqual(new Set(got), new Set(ids));
    // Same session, one partition: calls made one after another keep their order; the five
    // concurrent ones are captured as they complete, in any order, after all of those.
    assert.deepEqual(got.slice(0, 15), ids.slice(0, 15));
    assert.deepEqual(new Set(got.slice(15)), new Set(ids.slice(15)));
  } finally {
    await collector.stop();
    await gw.stop();
    await proxy.stop();
  }
});

test('restart: turns kept in the outbox of a gateway that never reached Kafka are drained by the next run, exactly once', async () => {
  const { home, k } = await gatewayHome('restart');
  const builtin = {
    weightsDir: `${home.dir}/weights`,
    initConfig: { contextLength: 128, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 },
    followWeights: false,
  };
  const dead = await closedPort();
  const a = await startGateway({
    home: home.dir,
    builtin,
    drainOnStopMs: 500,
    kafka: { brokers: [`127.0.0.1:${dead}`], registryUrl: k.registryUrl, naming: k.naming },
  });
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await chat(a.url, i, `s-restart-${i % 2}`, i % 3 === 0);
    assert.equal(r.status, 200);
    ids.push(r.turnId!);
  }
  assert.equal(a.gw.outbox.depth, 6);
  await a.gw.stop();

  const collector = await TopicCollector.start(k.kafka, k.codecs, 'turns');
  const b = await startGateway({ home: home.dir, builtin, kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming } });
  try {
    const events = await collector.waitFor(6, 60_000, 2500);
    assert.deepEqual(events.map((e) => e.value.turnId).sort(), [...ids].sort());
    await waitFor('depth 0', () => b.gw.outbox.depth === 0, { timeoutMs: 10_000 });
  } finally {
    await collector.stop();
    await b.gw.stop();
  }
  // A third start finds nothing left to send.
  const c = await startGateway({ home: home.dir, builtin, kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming } });
  assert.equal(c.gw.outbox.depth, 0);
  await c.gw.stop();
});
