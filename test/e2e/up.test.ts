/**
 * `turnstream up` — what `npm start` runs — against the shared stack (given as endpoints, so
 * `up` starts no infra of its own): every service comes up, a chat request is answered and
 * captured, and Ctrl-C stops the whole process tree.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { createEventCodecs, createKafka, readToEnd } from '../../streams/index.ts';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../support/stack.ts';
import { spawnUp } from '../support/turnstream-up.ts';
import { waitFor } from '../support/wait-for.ts';

let stack: Awaited<ReturnType<typeof ensureStack>>;

describe('turnstream up', { timeout: 420000 }, () => {
  before(async () => {
    stack = await ensureStack();
  });

  it('starts every service, answers and captures a chat request, and stops everything on Ctrl-C', async () => {
    const prefix = uniquePrefix('up');
    const home = mkdtempSync(join(tmpdir(), 'turnstream-up-'));
    const up = await spawnUp({
      command: [process.execPath, 'bin/turnstream.js'],
      cwd: REPO_ROOT,
      env: process.env,
      stack,
      home,
      topicPrefix: prefix,
    });
    try {
      await up.ready();
      const out = up.output();
      assert.match(out, new RegExp(`gateway\\s+ready\\s+pid \\d+\\s+http://127\\.0\\.0\\.1:${up.port}`));

      // As a client would: the model named by /v1/models (the real SmolLM2 by default).
      const models = (await (await fetch(`http://127.0.0.1:${up.port}/v1/models`)).json()) as { data: Array<{ id: string }> };
      const model = models.data[0].id;
      assert.match(model, /smollm2/i);
      const res = await fetch(`http://127.0.0.1:${up.port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'up-session' },
        body: JSON.stringify({
          model,
          max_tokens: 16,
          temperature: 0,
          // Bare, the question's first token is a near tie ("The" 0.19–0.23, "La" 0.19–0.21) that llama.cpp's CPU
          // kernels break differently (AVX2 and AMX builds answer in French); asked for a sentence, "The" leads at 0.62.
          messages: [{ role: 'user', content: 'What is the capital of France? Answer in one sentence.' }],
        }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      assert.match(body.choices[0].message.content, /Paris/);

      // The turn reached Kafka.
      const kafka = createKafka({ brokers: [stack.brokers], clientId: 'up-test' });
      const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
      const turns = await waitFor('the turn on Kafka', () => readToEnd(kafka, codecs.topic('turns'), () => undefined), {
        timeoutMs: 60_000,
        intervalMs: 500,
      });
      assert.equal(turns, 1);
    } finally {
      await up.stop();
    }
  });
});
