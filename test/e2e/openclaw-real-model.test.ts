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
import type { Gateway } from '../../gateway/index.ts';
import { DEFAULT_TIMEOUT_SECONDS, withPlugin } from '../../integrations/openclaw/index.ts';
import { resolveModel } from '../../policy/index.ts';
import type { Turn } from '../../schemas/index.ts';
import { family, readAll, waitFor, type Family } from '../integration/processors/support.ts';
import { createLlamaGateway } from '../support/llama-gateway.ts';
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
  gw = createLlamaGateway(
    tmp,
    model,
    { systemPrompt: 'You are a helpful assistant.' },
    {
      // OpenClaw's request timeout (what install-plugin sets) bounds the first turn, not the gateway's own 300 s.
      generationTimeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000,
      kafka: { brokers: [stack.brokers], registryUrl: stack.registryUrl, naming: { prefix: f.prefix } },
    },
  );
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
  // The provider entry `turnstream openclaw install-plugin --gateway` adds, with its request timeout.
  const { config } = withPlugin(
    { agents: { defaults: { model: { primary: 'turnstream/smollm2-135m' }, workspace: join(tmp, 'workspace') } } },
    { gateway: { url, model: 'smollm2-135m', contextWindow: 131072, maxTokens: 48 } },
  );
  const provider = (config.models as { providers: { turnstream: { timeoutSeconds: number } } }).providers.turnstream;
  assert.equal(provider.timeoutSeconds, DEFAULT_TIMEOUT_SECONDS);
  await writeFile(join(oc.stateDir, 'openclaw.json'), JSON.stringify(config, null, 2));
  const say = async (message: string): Promise<{ stdout: string; seconds: number }> => {
    const t0 = Date.now();
    const { stdout } = await openclaw(oc, ['agent', '--local', '--session-id', 'oc-real', '--message', message, '--json'], 900_000);
    return { stdout, seconds: (Date.now() - t0) / 1000 };
  };
  const first = await say('What is the capital of France?');
  const second = await say('Thanks! And what is the capital of Italy?');
  assert.ok(first.stdout.length > 0 && second.stdout.length > 0, 'OpenClaw printed both answers');
  process.stderr.write(`openclaw turns (the agent command, end to end): ${first.seconds} s, then ${second.seconds} s\n`);

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
  // What the prefix cache served: prompt tokens evaluated before, over every request OpenClaw sent.
  const metrics = await (await fetch(`${url}/metrics`)).text();
  process.stderr.write(
    `${metrics
      .split('\n')
      .filter((l) => l.startsWith('turnstream_gateway_tokens_total'))
      .join('\n')}\n`,
  );
  process.stderr.write(
    `openclaw on smollm2: ${turns.map((t) => `${t.promptTokenIds.length} prompt tokens (${t.promptTruncatedTokens} cut), ${t.latencyMs} ms: ${JSON.stringify((t.response.content ?? '').slice(0, 120))}`).join(' | ')}\n`,
  );
});
