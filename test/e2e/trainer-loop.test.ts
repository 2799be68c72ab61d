/**
 * The whole loop on real Kafka: chat traffic through the gateway → session assembler → embedded
 * judge → sample builder → learner → a WeightVersion → the gateway hot-swaps it, and the next
 * Turn event carries the new policyVersion. No request fails on the way. The processors and the
 * learner are built as `turnstream up` builds them (stack/), from settings: RL, small batches.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ensureTopics, type ProcessorHandle } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { learnerService, processorServices, resolveSettings } from '../../stack/index.ts';
import type { LearnerHandle } from '../../trainer/index.ts';
import { TopicCollector } from '../integration/gateway/support.ts';
import { startKafkaGateway, type KafkaGateway } from '../support/kafka-gateway.ts';
import { waitFor } from '../support/wait-for.ts';

let g: KafkaGateway;
const services: ProcessorHandle[] = [];
let learner: LearnerHandle | undefined;

before(async () => {
  g = await startKafkaGateway('trainer-e2e');
  await ensureTopics(g.k.kafka, { naming: g.k.naming, partitions: 3 });
});
after(async () => {
  await learner?.stop().catch(() => undefined);
  for (const s of services) await s.stop().catch(() => undefined);
  await g?.stop();
});

async function chat(
  messages: Array<{ role: string; content: string }>,
  session: string,
): Promise<{ text: string; turnId: string; status: number }> {
  const res = await fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session, 'x-user-id': `user-${session}` },
    body: JSON.stringify({ model: 'turnstream-tiny', messages, max_tokens: 12 }),
  });
  const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
  return { text: body.choices?.[0]?.message.content ?? '', turnId: res.headers.get('x-turn-id') ?? '', status: res.status };
}

test('chat traffic → samples → WeightVersion → the gateway serves it, no request failing', { timeout: 400000 }, async () => {
  const logger = createLogger('e2e', 'warn');
  // As TRAIN_METHOD=rl SESSION_IDLE_TIMEOUT_MS=600000 TRAIN_BATCH_SIZE=4 TRAIN_MAX_WAIT_MS=2000 would set them.
  const settings = resolveSettings({
    trainMethod: 'rl',
    weightsDir: `${g.home.dir}/weights`,
    session: { idleTimeoutMs: 600_000 },
    train: { batchSize: 4, maxWaitMs: 2000 },
  });
  // No JUDGE_BASE_URL: the embedded judge; RL: no teacher.
  services.push(...(await processorServices(settings, ['session-assembler', 'judge', 'sample-builder'], g.k, null, { logger })));
  ({ handle: learner } = await learnerService(settings, { kind: 'builtin', modelId: 'turnstream-tiny' }, g.k, { logger }));
  const turns = await TopicCollector.start(g.k.kafka, g.k.codecs, 'turns');
  const weights = await TopicCollector.start(g.k.kafka, g.k.codecs, 'weights');

  // Sessions of three main turns: the user's reply to turn t (thanks or a correction) is its next state.
  const statuses: number[] = [];
  const replies = ['Thanks, that is great!', "No, that's wrong. Try again."];
  for (let s = 0; s < 4; s++) {
    const history: Array<{ role: string; content: string }> = [];
    for (let t = 0; t < 3; t++) {
      history.push({ role: 'user', content: t === 0 ? `question ${s}` : replies[(s + t) % 2] });
      const r = await chat(history, `e2e-${s}`);
      statuses.push(r.status);
      history.push({ role: 'assistant', content: r.text });
    }
  }
  assert.ok(
    statuses.every((x) => x === 200),
    `every request answered: ${statuses.join(',')}`,
  );

  // 4 sessions × 2 judged pairs = 8 RL samples → at least one version.
  await waitFor('a WeightVersion', () => weights.events.length > 0, { timeoutMs: 240_000, intervalMs: 500 }).catch(() =>
    assert.fail(`no WeightVersion; learner ${JSON.stringify(learner?.stats())}`),
  );
  const wv = weights.events[0].value;
  assert.equal(wv.version, 1);
  assert.ok(wv.metrics.samples > 0 && Number.isFinite(wv.metrics.loss));

  // The gateway swaps between requests; keep chatting until a turn carries the new version.
  let i = 0;
  const last = await waitFor(
    'a turn served by version 1 (or a failed request)',
    async () => {
      const r = await chat([{ role: 'user', content: `after ${i}` }], `after-${i++}`);
      return (r.status !== 200 || turns.events.some((e) => e.value.policyVersion >= 1)) && r;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  ).catch(() => assert.fail('the gateway never served version 1'));
  assert.equal(last.status, 200, 'no request fails during the swap');
  const served = Math.max(0, ...turns.events.map((e) => e.value.policyVersion));
  assert.ok(served >= 1);
  await turns.stop();
  await weights.stop();
});
