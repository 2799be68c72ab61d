/**
 * Generations side by side on the llama.cpp engine (a tiny GGUF the test writes): with
 * `parallel` 4, eight greedy answers asked at once are token for token, log-prob for log-prob,
 * what each prompt gets when it is asked alone. llama.cpp decoding several sequences of one
 * context as one batch changed what each computed (gateway/defaults.ts), so a version's
 * sequences live in contexts of their own by default.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Gateway } from '../../../gateway/index.ts';
import { startTinyLlamaGateway } from '../../support/llama-gateway.ts';

const PARALLEL = 4;
let dir = '';
let gw: Gateway;
let url = '';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llama-parallel-'));
  ({ gw, url } = await startTinyLlamaGateway(
    dir,
    { architecture: 'llama', seed: 5, contextLength: 512 },
    { contextSize: 512, parallel: PARALLEL, threads: PARALLEL, kvCache: false },
  ));
});

after(async () => {
  await gw?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Answer {
  content: string;
  logprobs: Array<{ token: string; logprob: number }>;
  started: number;
  ended: number;
}

async function ask(i: number): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [
        { role: 'system', content: `You are helper number ${i}.` },
        { role: 'user', content: `Question ${i}: what follows ${i * 7} and ${i * 13}?` },
      ],
      temperature: 0,
      max_tokens: 24,
      logprobs: true,
      // each its own caller: one caller may hold only a quarter of the slots
      user: `u${i}`,
    }),
  });
  const body = (await res.json()) as { choices: Array<{ message: { content: string }; logprobs: { content: Answer['logprobs'] } }> };
  assert.equal(res.status, 200, JSON.stringify(body));
  return { content: body.choices[0].message.content, logprobs: body.choices[0].logprobs.content, started, ended: Date.now() };
}

test('answers decoded side by side are the answers decoded alone', { timeout: 300_000 }, async () => {
  const prompts = Array.from({ length: 2 * PARALLEL }, (_, i) => i + 1);
  const together = await Promise.all(prompts.map(ask));
  // some of them ran at the same time: one began before another ended
  const overlapping = together.filter((a) => together.some((b) => b !== a && b.started < a.ended && a.started < b.ended));
  assert.ok(overlapping.length >= 2, 'requests in flight together');
  for (const [k, i] of prompts.entries()) {
    const alone = await ask(i);
    const both = together[k];
    assert.ok(alone.logprobs.length > 0, `prompt ${i}: an answer`);
    assert.equal(both.content, alone.content, `prompt ${i}: the same answer`);
    assert.deepEqual(
      both.logprobs.map((e) => e.token),
      alone.logprobs.map((e) => e.token),
    );
    both.logprobs.forEach((e, t) => assert.ok(Math.abs(e.logprob - alone.logprobs[t].logprob) < 1e-4, `prompt ${i}, token ${t}: log-prob`));
  }
});
