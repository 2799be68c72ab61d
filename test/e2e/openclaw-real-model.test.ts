/**
 * The real OpenClaw agent (npm `openclaw`, Node 24) holding a two-turn conversation with the real
 * default model (SmolLM2-135M-Instruct on llama.cpp) through the gateway. OpenClaw's system prompt
 * is longer than the model's context, so the gateway fits it (never an error) and the Turns
 * record the token ids it actually used.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../cli/config.ts';
import { createGateway, type Gateway } from '../../gateway/index.ts';
import { resolveModel } from '../../policy/index.ts';
import type { Turn } from '../../schemas/index.ts';
import { createLogger } from '../../streams/index.ts';
import { family, readAll, waitFor, type Family } from '../integration/processors/support.ts';
import { ensureOpenClaw, openclaw, type OpenClawEnv } from '../support/openclaw.ts';
import { ensureStack } from '../support/stack.ts';

let tmp = '';
let f: Family;
let gw: Gateway;
let url = '';

before(async () => {
  const stack = await ensureStack();
  const model = await resolveModel('smollm2-135m', { cacheDir: loadConfig().model.cacheDir });
  tmp = await mkdtemp(join(tmpdir(), 'ts-e2e-openclaw-real-'));
  f = await family('e2e-openclaw-real');
  gw = createGateway({
    port: 0,
    home: tmp,
    logger: createLogger('gateway-e2e', 'warn'),
    llama: {
      model: { name: 'smollm2-135m', modelId: 'smollm2-135m', path: model.path!, sha256: model.sha256! },
      weightsDir: join(tmp, 'weights'),
      systemPrompt: 'You are a helpful assistant.',
      threads: 1,
    },
    kafka: { brokers: [stack.brokers], registryUrl: stack.registryUrl, naming: { prefix: f.prefix } },
  });
  url = await gw.start();
});

after(async () => {
  await gw?.stop();
  await f?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

test('OpenClaw holds a two-turn conversation with SmolLM2 through the gateway', { timeout: 1_200_000 }, async () => {
  const install = await ensureOpenClaw();
  const oc: OpenClawEnv = { install, home: join(tmp, 'home'), stateDir: join(tmp, 'state') };
  await mkdir(oc.home, { recursive: true });
  await mkdir(oc.stateDir, { recursive: true });
  const config = {
    models: {
      providers: {
        turnstream: {
          baseUrl: `${url}/v1`,
          apiKey: 'unused',
          api: 'openai-completions',
          models: [{ id: 'smollm2-135m', name: 'smollm2-135m', reasoning: false, input: ['text'], contextWindow: 131072, maxTokens: 48 }],
        },
      },
    },
    agents: { defaults: { model: { primary: 'turnstream/smollm2-135m' }, workspace: join(tmp, 'workspace') } },
  };
  await writeFile(join(oc.stateDir, 'openclaw.json'), JSON.stringify(config, null, 2));
  const say = async (message: string): Promise<string> => {
    const { stdout } = await openclaw(oc, ['agent', '--local', '--session-id', 'oc-real', '--message', message, '--json'], 900_000);
    return stdout;
  };
  const first = await say('What is the capital of France?');
  const second = await say('Thanks! And what is the capital of Italy?');
  assert.ok(first.length > 0 && second.length > 0, 'OpenClaw printed both answers');

  const ours = (t: Turn) => t.requestMessages.some((m) => m.role === 'user' && (m.content ?? '').includes('sessionId=oc-real'));
  await waitFor('both turns on Kafka', async () => (await readAll(f, 'turns')).filter(ours).length >= 2, 120_000);
  const turns = (await readAll(f, 'turns')).filter(ours).sort((a, b) => a.requestedAt - b.requestedAt);
  assert.equal(turns.length, 2);
  for (const t of turns) {
    assert.equal(t.policyModelId, 'smollm2-135m');
    assert.equal(t.tokenized, true);
    assert.ok(
      (t.response.content ?? '').trim().length > 0 || t.response.toolCalls.length > 0,
      `turn answered: ${JSON.stringify(t.response)}`,
    );
    assert.ok(
      t.promptTokenIds.length <= 8192 && t.promptTokenIds.length > 1000,
      `prompt fitted to the context: ${t.promptTokenIds.length} tokens`,
    );
  }
  assert.ok(turns[0].promptTruncatedTokens > 0, "OpenClaw's prompt exceeds SmolLM2's context, and the gateway fitted it");
  assert.equal(turns[1].sessionId, turns[0].sessionId, 'one session');
  assert.equal(turns[1].sessionSource, 'INFERRED');
  process.stderr.write(
    `openclaw on smollm2: ${turns.map((t) => `${t.promptTokenIds.length} prompt tokens (${t.promptTruncatedTokens} cut), ${t.latencyMs} ms: ${JSON.stringify((t.response.content ?? '').slice(0, 120))}`).join(' | ')}\n`,
  );
});
