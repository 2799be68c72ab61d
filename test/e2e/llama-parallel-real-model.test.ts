/**
 * SmolLM2-135M (Q4_1) with 8 generations side by side: sixteen greedy answers asked at once
 * are, token for token and log-prob for log-prob, what each prompt gets when asked alone. With
 * the eight sequences in one llama.cpp context (`batching: 'shared'`) 31 of 32 such answers
 * changed on this CPU build, with text of other prompts leaking in (gateway/defaults.ts).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../cli/config.ts';
import type { Gateway } from '../../gateway/index.ts';
import { resolveModel } from '../../policy/index.ts';
import { createLlamaGateway } from '../support/llama-gateway.ts';

const PARALLEL = 8;
let tmp = '';
let gw: Gateway;
let url = '';

before(async () => {
  const model = await resolveModel('smollm2-135m', { cacheDir: loadConfig().model.cacheDir });
  tmp = await mkdtemp(join(tmpdir(), 'ts-e2e-llama-parallel-'));
  gw = createLlamaGateway(tmp, model, { contextSize: 1024, parallel: PARALLEL, threads: 2, kvCache: false });
  url = await gw.start();
});

after(async () => {
  await gw?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

interface Answer {
  content: string;
  logprobs: Array<{ token: string; logprob: number }>;
}

async function ask(i: number): Promise<Answer> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [
        { role: 'system', content: 'You are a helpful assistant. Answer briefly.' },
        {
          role: 'user',
          content: `Question ${i}: what is ${i} plus ${i * 3}? Then name a fruit starting with ${String.fromCharCode(65 + i)}.`,
        },
      ],
      temperature: 0,
      max_tokens: 32,
      logprobs: true,
      // each its own caller: one caller may hold only a quarter of the slots
      user: `u${i}`,
    }),
  });
  const body = (await res.json()) as { choices: Array<{ message: { content: string }; logprobs: { content: Answer['logprobs'] } }> };
  assert.equal(res.status, 200, JSON.stringify(body));
  return { content: body.choices[0].message.content, logprobs: body.choices[0].logprobs.content };
}

test('SmolLM2 answers decoded side by side are the answers decoded alone', { timeout: 600_000 }, async () => {
  const prompts = Array.from({ length: 2 * PARALLEL }, (_, i) => i);
  const together = await Promise.all(prompts.map(ask));
  const differ: string[] = [];
  for (const i of prompts) {
    const alone = await ask(i);
    const both = together[i];
    assert.ok(alone.logprobs.length > 0, `prompt ${i}: an answer`);
    const same =
      both.content === alone.content &&
      both.logprobs.length === alone.logprobs.length &&
      both.logprobs.every((e, t) => e.token === alone.logprobs[t].token && Math.abs(e.logprob - alone.logprobs[t].logprob) < 1e-3);
    if (!same) differ.push(`#${i}: ${JSON.stringify(both.content)} alone ${JSON.stringify(alone.content)}`);
  }
  assert.deepEqual(differ, [], `${differ.length} of ${prompts.length} answers changed when decoded side by side`);
});
