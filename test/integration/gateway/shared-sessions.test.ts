/**
 * Two gateway instances behind a load balancer without affinity: a conversation whose turns
 * alternate between them keeps one session (inferred from the history), feedback naming only
 * a turn id works on the instance that did not serve it, and a gateway started later learns
 * the recent turns from the topic. With sharing off, each instance knows only its own turns.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';
import { startGateway, tempHome, testKafka, TopicCollector, type StartedGateway, type TestKafka } from './support.ts';
import { waitFor } from '../../support/wait-for.ts';

let stack: { brokers: string; registryUrl: string };
const homes: Array<Awaited<ReturnType<typeof tempHome>>> = [];
const gateways: StartedGateway[] = [];

before(async () => {
  stack = await ensureStack();
});
after(async () => {
  for (const g of gateways) await g.gw.stop();
  for (const h of homes) await h.cleanup();
});

type Msg = { role: string; content: string };
/** A turn as the tests saw it: its ids from the headers, and the answer. */
type Turn = { turnId: string; sessionId: string; answer: string };

async function chat(url: string, messages: Msg[]): Promise<Turn> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages, max_tokens: 8, temperature: 0 }),
  });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
  return { turnId: res.headers.get('x-turn-id')!, sessionId: res.headers.get('x-session-id')!, answer: body.choices[0].message.content };
}

async function gateway(k: TestKafka, name: string, shareSessions: boolean): Promise<StartedGateway> {
  const home = await tempHome(name);
  homes.push(home);
  const g = await startGateway({
    home: home.dir,
    gatewayId: name,
    shareSessions,
    kafka: { brokers: k.brokers, registryUrl: k.registryUrl, naming: k.naming },
    builtin: {
      weightsDir: `${home.dir}/weights`,
      initConfig: { contextLength: 256, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 },
      followWeights: false,
    },
  });
  gateways.push(g);
  return g;
}

/** Waits until `turnId` has reached the topic. */
async function reached(c: TopicCollector<'turns'>, turnId: string): Promise<void> {
  await waitFor(`turn ${turnId} to reach the topic`, () => c.events.some((e) => e.value.turnId === turnId), { timeoutMs: 30_000 });
}

/** Waits until a gateway's session index (its /metrics gauge) holds at least `n` turns. */
async function knows(g: StartedGateway, n: number): Promise<void> {
  const size = async () => {
    const text = await (await fetch(`${g.url}/metrics`)).text();
    return Number(/^turnstream_gateway_session_index_size(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
  };
  await waitFor(`the gateway to know ${n} turns`, async () => (await size()) >= n, { timeoutMs: 30_000, intervalMs: 100 });
}

/** Two gateways on fresh topics, the first turn of a conversation served by the first and on the topic; then `body`. */
async function onTwoGateways(
  name: string,
  names: [string, string],
  shareSessions: boolean,
  body: (s: {
    k: TestKafka;
    collector: TopicCollector<'turns'>;
    a: StartedGateway;
    b: StartedGateway;
    history: Msg[];
    t1: Turn;
  }) => Promise<void>,
): Promise<void> {
  const k = await testKafka(stack, uniquePrefix(name));
  const collector = await TopicCollector.start(k.kafka, k.codecs, 'turns');
  try {
    const a = await gateway(k, names[0], shareSessions);
    const b = await gateway(k, names[1], shareSessions);
    const history: Msg[] = [{ role: 'user', content: 'hello there' }];
    const t1 = await chat(a.url, history);
    await reached(collector, t1.turnId);
    await body({ k, collector, a, b, history, t1 });
  } finally {
    await collector.stop();
  }
}

test('a conversation alternating between two instances keeps its session; feedback by turn id works on either; a late instance learns recent turns', () =>
  onTwoGateways('gateway-shared-sessions', ['gw-a', 'gw-b'], true, async ({ k, collector, a, b, history, t1 }) => {
    await knows(b, 1); // b has read a's turn back from the topic
    history.push({ role: 'assistant', content: t1.answer }, { role: 'user', content: 'and then?' });
    const t2 = await chat(b.url, history);
    assert.equal(t2.sessionId, t1.sessionId, 'the second instance continues the session the first one started');
    await reached(collector, t2.turnId);
    await knows(a, 2);
    history.push({ role: 'assistant', content: t2.answer }, { role: 'user', content: 'thanks' });
    const t3 = await chat(a.url, history);
    assert.equal(t3.sessionId, t1.sessionId);

    const fb = await fetch(`${b.url}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ turn_id: t1.turnId, rating: 1 }),
    });
    assert.equal(fb.status, 201, 'feedback naming a turn served by the other instance');
    assert.equal(((await fb.json()) as { session_id: string }).session_id, t1.sessionId);

    // An instance started now learns the last 30 minutes of turns from the topic.
    await reached(collector, t3.turnId);
    const c = await gateway(k, 'gw-c', true);
    history.push({ role: 'assistant', content: t3.answer }, { role: 'user', content: 'one more' });
    // Its follower joins in the background: until it has read the backlog, a call may start a new session.
    const t4 = await waitFor(
      'gw-c to continue the session',
      async () => {
        const t = await chat(c.url, [...history]);
        return t.sessionId === t1.sessionId && t;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    assert.equal(t4.sessionId, t1.sessionId, 'a gateway started later continues the session');

    const events = await collector.waitFor(4, 30_000, 500);
    const sources = new Map(events.map((e) => [e.value.turnId, e.value]));
    assert.equal(sources.get(t1.turnId)!.sessionSource, 'GENERATED');
    assert.equal(sources.get(t2.turnId)!.sessionSource, 'INFERRED');
    assert.equal(sources.get(t2.turnId)!.gatewayId, 'gw-b');
    assert.equal(sources.get(t3.turnId)!.sessionSource, 'INFERRED');
  }));

test('with sharing off, an instance infers sessions only from the turns it served itself', () =>
  onTwoGateways('gateway-unshared-sessions', ['gw-x', 'gw-y'], false, async ({ a, b, history, t1 }) => {
    await new Promise((r) => setTimeout(r, 1000)); // absence window: were b following the topic, it would have read t1 by now
    history.push({ role: 'assistant', content: t1.answer }, { role: 'user', content: 'and then?' });
    const t2 = await chat(b.url, history);
    assert.notEqual(t2.sessionId, t1.sessionId);
    const t3 = await chat(a.url, history);
    assert.equal(t3.sessionId, t1.sessionId, 'the instance that served the turn still infers it');
    const fb = await fetch(`${b.url}/v1/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ turn_id: t1.turnId, rating: 1 }),
    });
    assert.equal(fb.status, 404);
  }));
