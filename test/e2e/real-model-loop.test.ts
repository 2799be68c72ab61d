/**
 * The whole loop on the real default model (SmolLM2-135M-Instruct on llama.cpp) and real Kafka:
 * chat turns with feedback → pairs → embedded judge → samples (RL, and OPD with the teacher
 * deferred to the learner) → a LoRA version → the gateway swaps the adapter in while a client
 * keeps talking, and no request fails. Afterwards the served model (base + the published adapter,
 * as llama.cpp applies it) gives the rewarded reply a higher log-probability than the base did,
 * on the same prompt.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { loadConfig } from '../../cli/config.ts';
import { AdapterStore, resolveModel, selectBackend, type ResolvedModel } from '../../policy/index.ts';
import { createEmbeddedJudge, LlamaTeacher, startJudge, startSampleBuilder, startSessionAssembler } from '../../processors/index.ts';
import { ensureTopics, type ProcessorHandle } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { LoraLineage, startLearner, type LearnerHandle } from '../../trainer/index.ts';
import { TopicCollector } from '../integration/gateway/support.ts';
import { startKafkaGateway, type KafkaGateway } from '../support/kafka-gateway.ts';
import { llamaLogProbs } from '../support/llama-logprobs.ts';
import { waitFor } from '../support/wait-for.ts';

const SYSTEM = 'You are a helpful assistant.';
let model: ResolvedModel;
let g: KafkaGateway;
const services: ProcessorHandle[] = [];
let learner: LearnerHandle | undefined;

before(async () => {
  model = await resolveModel('smollm2-135m', { cacheDir: loadConfig().model.cacheDir });
  g = await startKafkaGateway('real-model', (home) => ({
    builtin: undefined,
    llama: {
      model: { name: 'smollm2-135m', modelId: 'smollm2-135m', path: model.path!, sha256: model.sha256! },
      weightsDir: `${home}/weights`,
      systemPrompt: SYSTEM,
      contextSize: 1024,
      threads: 1,
      temperature: 0.7,
      defaultMaxTokens: 48,
    },
  }));
  await ensureTopics(g.k.kafka, { naming: g.k.naming, partitions: 3 });
});
after(async () => {
  await learner?.stop().catch(() => undefined);
  for (const s of services) await s.stop().catch(() => undefined);
  await g?.stop();
});

async function chat(messages: Array<{ role: string; content: string }>, session: string, done = false) {
  const res = await fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-session-id': session,
      'x-user-id': `user-${session}`,
      ...(done ? { 'x-session-done': '1' } : {}),
    },
    body: JSON.stringify({ model: 'smollm2-135m', messages }),
  });
  const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
  return { status: res.status, text: body.choices?.[0]?.message.content ?? '', turnId: res.headers.get('x-turn-id') ?? '' };
}

test('the official openai client: Paris, streamed and not, with log-probs when asked', { timeout: 120_000 }, async () => {
  const client = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'unused' });
  // Bare, the question's first token is a near tie ("The" 0.19–0.23, "La" 0.19–0.21) that llama.cpp's CPU
  // kernels break differently (AVX2 and AMX builds answer in French); asked for a sentence, "The" leads at 0.62.
  const messages = [{ role: 'user' as const, content: 'What is the capital of France? Answer in one sentence.' }];
  const res = await client.chat.completions.create({
    model: 'smollm2-135m',
    messages,
    temperature: 0,
    max_tokens: 24,
    logprobs: true,
    top_logprobs: 2,
  });
  assert.match(res.choices[0].message.content ?? '', /Paris/);
  const lps = res.choices[0].logprobs?.content ?? [];
  assert.ok(lps.length > 0, 'log-probs of the sampled tokens');
  assert.equal(lps.map((t) => t.token).join(''), res.choices[0].message.content, 'one entry per generated token, in order');
  for (const t of lps) {
    assert.ok(t.logprob <= 0 && Number.isFinite(t.logprob));
    assert.equal(t.top_logprobs.length, 2);
  }
  const stream = await client.chat.completions.create({ model: 'smollm2-135m', messages, temperature: 0, max_tokens: 24, stream: true });
  let text = '';
  let chunks = 0;
  for await (const c of stream) {
    text += c.choices[0]?.delta?.content ?? '';
    chunks++;
  }
  assert.ok(chunks > 3, `streamed in pieces (${chunks} chunks)`);
  assert.match(text, /Paris/);
});

test(
  'real model: feedback → samples → a LoRA version served with no failed request; the rewarded reply became likelier',
  { timeout: 900_000 },
  async () => {
    const logger = createLogger('e2e-real', 'warn');
    const common = { kafka: g.k.kafka, codecs: g.k.codecs, logger };
    await selectBackend('wasm');
    services.push(await startSessionAssembler({ ...common, idleTimeoutMs: 600_000, feedbackGraceMs: 0 }));
    services.push(await startJudge({ ...common, judge: createEmbeddedJudge({ mode: 'combined' }) }));
    const teacher = await LlamaTeacher.load({ model: { name: 'smollm2-135m', path: model.path! }, systemPrompt: SYSTEM });
    services.push(await startSampleBuilder({ ...common, method: 'combined', teacher }));
    const lineage = new LoraLineage({
      weightsDir: `${g.home.dir}/weights`,
      modelId: 'smollm2-135m',
      base: { name: 'smollm2-135m', path: model.path!, sha256: model.sha256! },
      lora: { rank: 8, alpha: 16, lastLayers: 8 },
    });
    learner = await startLearner({
      ...common,
      weightsDir: `${g.home.dir}/weights`,
      lineage,
      batch: { batchSize: 6, minSamples: 4, maxWaitMs: 3000 },
      optimizer: { lr: 2e-3 },
      step: { maxKl: 1 },
    });
    await learner.ready;
    const turns = await TopicCollector.start(g.k.kafka, g.k.codecs, 'turns');
    const samples = await TopicCollector.start(g.k.kafka, g.k.codecs, 'samples');
    const weights = await TopicCollector.start(g.k.kafka, g.k.codecs, 'weights');

    // Four users thank the assistant, two correct it (with a hint the OPD teacher uses).
    const questions = [
      'How do tides work?',
      'What is a good breakfast?',
      'Why is the sky blue?',
      'How do plants grow?',
      'What is rain?',
      'How do bees make honey?',
    ];
    const replies = ['Thank you, that is perfect!', 'Great answer, thanks!', 'Thanks, very helpful!', 'Perfect, thank you so much!'];
    const corrections = ['No, that is too long. Answer in one short sentence.', 'That is wrong, keep it to one sentence please.'];
    const statuses: number[] = [];
    const firstTurns: string[] = [];
    for (let s = 0; s < questions.length; s++) {
      const history = [{ role: 'user', content: questions[s] }];
      const first = await chat(history, `real-${s}`);
      statuses.push(first.status);
      firstTurns.push(first.turnId);
      history.push({ role: 'assistant', content: first.text }, { role: 'user', content: s < 4 ? replies[s] : corrections[s - 4] });
      statuses.push((await chat(history, `real-${s}`, true)).status);
    }
    assert.deepEqual(
      statuses.filter((x) => x !== 200),
      [],
      'every chat answered',
    );

    // Keep talking through the swap; no request may fail.
    let talking = true;
    const during: number[] = [];
    const talker = (async () => {
      for (let i = 0; talking; i++) during.push((await chat([{ role: 'user', content: `Say hello number ${i}.` }], `talk-${i}`)).status);
    })();

    const t0 = Date.now();
    await waitFor('a WeightVersion', () => weights.events.length > 0, { timeoutMs: 600_000, intervalMs: 1000 }).catch((err: Error) =>
      assert.fail(`${err.message}: learner ${JSON.stringify(learner!.stats())}, samples ${samples.events.length}`),
    );
    const wv = weights.events[0].value;
    assert.equal(wv.version, 1);
    assert.equal(wv.format, 'gguf-lora-v1');
    assert.match(wv.baseModel, new RegExp(`^smollm2-135m@sha256:${model.sha256}$`));
    assert.ok(wv.metrics.samples >= 4, JSON.stringify(wv.metrics));
    const byTurn = new Map(samples.events.map((e) => [e.value.turnId, e.value]));
    assert.ok(
      samples.events.some((e) => e.value.teacherPromptTokens !== null && e.value.teacherLogprobs === null),
      'a correction became an OPD sample whose teacher the learner scores',
    );

    await waitFor('the gateway to swap version 1 in', () => g.gw.llama!.version === 1, {
      timeoutMs: 660_000 - (Date.now() - t0),
      intervalMs: 200,
    });
    const served = turns.events.length;
    await waitFor('a turn served by version 1', () => turns.events.slice(served).some((e) => e.value.policyVersion === 1), {
      timeoutMs: 120_000,
      intervalMs: 200,
    });
    talking = false;
    await talker;
    assert.ok(during.length > 0 && during.every((x) => x === 200), `requests during the swap: ${during.join(',')}`);

    // The rewarded reply of a thanked session, on its own prompt: base vs base + adapter v1.
    const rewarded = firstTurns.map((id) => byTurn.get(id)).find((s) => s && s.reward > 0)!;
    assert.ok(rewarded, 'a thanked turn became a rewarded sample');
    const ids = rewarded.tokens;
    const positions = Array.from({ length: rewarded.responseLength }, (_, i) => rewarded.promptLength - 1 + i);
    const sum = (rows: Float64Array[]) => positions.reduce((a, p) => a + rows[p][ids[p + 1]], 0) / positions.length;
    const ref = await new AdapterStore(`${g.home.dir}/weights`).ref('smollm2-135m', 1);
    const before = sum(await llamaLogProbs(model.path!, ids, { contextSize: 1024 }));
    const afterLp = sum(await llamaLogProbs(model.path!, ids, { contextSize: 1024, adapters: [{ filePath: ref.adapterPath!, scale: 1 }] }));
    process.stderr.write(
      `rewarded reply: mean log-prob ${before.toFixed(4)} → ${afterLp.toFixed(4)} per token (v1: ${JSON.stringify(wv.metrics)})\n`,
    );
    assert.ok(afterLp > before, `the rewarded reply became likelier: ${before} → ${afterLp}`);
    for (const c of [turns, samples, weights]) await c.stop();
  },
);
