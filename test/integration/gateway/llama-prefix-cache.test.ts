/**
 * The llama.cpp engine's prefix cache on a tiny GGUF the test writes, one sequence (so every
 * session takes it from the one before): a prompt evaluated once is not evaluated again, and
 * nothing about the answer changes for it. Each answer is checked against bare node-llama-cpp
 * evaluating the same token ids on a cleared sequence at temperature 0; log-probs against the
 * same request answered without reuse. A session's state comes back from disk after another
 * session took its sequence; a new session reuses a system prompt seen before; after a hot swap
 * a prompt is evaluated anew under the new adapter, unless the adapter leaves the KV cache as
 * the base computes it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import type { Gateway } from '../../../gateway/index.ts';
import { commonPrefix } from '../../../gateway/kv-states.ts';
import { llamaRuntime, type LoraPair, type TinyModel } from '../../../policy/index.ts';
import type { ChatMessage, Turn, WeightVersion } from '../../../schemas/index.ts';
import { startTinyLlamaGateway } from '../../support/llama-gateway.ts';
import { storeLoraVersion } from '../../support/lora-version.ts';
import { waitFor } from '../../support/wait-for.ts';

/** A chat message of role and text (the wire shape and ChatFormat's). */
const msg = (role: string, content: string): ChatMessage => ({ role, content, name: null, toolCallId: null, toolCalls: [] });

const CONTEXT = 1024;
let dir = '';
let tiny: TinyModel;
let gw: Gateway;
let url = '';
let bare: LlamaModel;
const turns = new Map<string, Turn>();

/** Long, distinct system prompts (a few hundred tokens of the tiny vocabulary each). */
const system = (name: string): string =>
  Array.from({ length: 24 }, (_, i) => `${name} rule ${i}: answer the user in the tone of tool ${(i * 7) % 13}.`).join(' ');

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llama-prefix-'));
  ({ tiny, gw, url } = await startTinyLlamaGateway(
    dir,
    { architecture: 'llama', seed: 11, contextLength: CONTEXT },
    { contextSize: CONTEXT, parallel: 1, kvCache: { dir: join(dir, 'kv'), minTokens: 16 } },
  ));
  // The Turns the gateway captures (no Kafka here: read them off its outbox).
  gw.outbox.setSender(async (records) => {
    for (const r of records) if (r.topic === 'turns') turns.set((r.value as Turn).turnId, r.value as Turn);
  });
  bare = await (await llamaRuntime()).loadModel({ modelPath: tiny.path });
});

after(async () => {
  await gw?.stop();
  for (const s of sequences.values()) await s.context.dispose();
  await bare?.dispose();
  await rm(dir, { recursive: true, force: true });
});

interface Answer {
  turn: Turn;
  cached: number;
  content: string;
  logprobs: Array<{ token: string; logprob: number; top_logprobs: Array<{ logprob: number }> }>;
}

async function ask(session: string, messages: ChatMessage[], logprobs = false): Promise<Answer> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: JSON.stringify({
      messages: messages.map(({ role, content }) => ({ role, content })),
      temperature: 0,
      max_tokens: 12,
      ...(logprobs ? { logprobs: true, top_logprobs: 3 } : {}),
    }),
  });
  const body = (await res.json()) as {
    choices: Array<{ message: { content: string }; logprobs: { content: Answer['logprobs'] } | null }>;
    usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
  };
  assert.equal(res.status, 200, JSON.stringify(body));
  const id = res.headers.get('x-turn-id')!;
  const turn = await waitFor(`turn ${id} captured`, () => turns.get(id));
  assert.equal(body.usage.prompt_tokens, turn.promptTokenIds.length);
  return {
    turn,
    cached: body.usage.prompt_tokens_details!.cached_tokens,
    content: body.choices[0].message.content,
    logprobs: body.choices[0].logprobs?.content ?? [],
  };
}

const sequences = new Map<string, LlamaContextSequence>();

/** What bare node-llama-cpp answers to these token ids on a cleared sequence (greedy, the end token included). */
async function reference(ids: readonly number[], adapterPath?: string): Promise<number[]> {
  let s = sequences.get(adapterPath ?? '');
  if (!s) {
    const ctx = await bare.createContext({
      contextSize: CONTEXT,
      threads: 1,
      ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath, scale: 1 }] } } : {}),
    });
    s = ctx.getSequence();
    sequences.set(adapterPath ?? '', s);
  }
  await s.clearHistory();
  const out: number[] = [];
  const it = s.evaluate([...ids] as Token[], { temperature: 0, yieldEogToken: true });
  for (let r = await it.next(); !r.done && out.length < 12; r = await it.next()) {
    out.push(r.value);
    if (bare.isEogToken(r.value)) break;
  }
  await it.return();
  return out;
}

const A: ChatMessage[] = [msg('system', system('Alpha')), msg('user', 'What is the capital of France?')];

let a1: Answer;

test(
  'a prompt evaluated before is reused but for its last token, and the answer and its log-probs are the same',
  { timeout: 120_000 },
  async () => {
    a1 = await ask('sa', A, true);
    assert.ok(a1.turn.promptTokenIds.length > 200, `a long prompt: ${a1.turn.promptTokenIds.length} tokens`);
    assert.ok(a1.cached < 8, `first time: nothing but the template's first tokens reused (${a1.cached})`);
    assert.deepEqual(a1.turn.responseTokenIds, await reference(a1.turn.promptTokenIds), 'the same answer as bare llama.cpp without reuse');

    const again = await ask('sa-again', A, true);
    assert.equal(again.cached, again.turn.promptTokenIds.length - 1, 'all but the last token reused');
    assert.deepEqual(again.turn.promptTokenIds, a1.turn.promptTokenIds, 'the Turn records the whole prompt');
    assert.deepEqual(again.turn.responseTokenIds, a1.turn.responseTokenIds);
    assert.equal(again.content, a1.content);
    assert.equal(again.logprobs.length, a1.logprobs.length);
    again.logprobs.forEach((e, i) => {
      assert.equal(e.token, a1.logprobs[i].token);
      // Flash attention is off on the CPU so that a token's result does not depend on its batch.
      assert.ok(Math.abs(e.logprob - a1.logprobs[i].logprob) < 1e-5, `log-prob ${i}: ${e.logprob} vs ${a1.logprobs[i].logprob}`);
      e.top_logprobs.forEach((t, j) => assert.ok(Math.abs(t.logprob - a1.logprobs[i].top_logprobs[j].logprob) < 1e-5));
    });
    for (let i = 0; i < again.turn.responseLogprobs.length; i++)
      assert.ok(Math.abs(again.turn.responseLogprobs[i] - a1.turn.responseLogprobs[i]) < 1e-5, 'the Turn keeps the same log-probs');
  },
);

let a2: Answer;
const A2 = (): ChatMessage[] => [...A, msg('assistant', a1.content), msg('user', 'And of Italy?')];

test("a session's next turn evaluates only what it adds", { timeout: 120_000 }, async () => {
  a2 = await ask('sa', A2());
  const shared = commonPrefix(a1.turn.promptTokenIds, a2.turn.promptTokenIds);
  assert.ok(shared >= a1.turn.promptTokenIds.length - 2, 'the second prompt extends the first');
  assert.ok(a2.cached >= shared, `reused ${a2.cached} of ${a2.turn.promptTokenIds.length} (shared ${shared})`);
  assert.deepEqual(a2.turn.responseTokenIds, await reference(a2.turn.promptTokenIds));
});

test(
  "another session on the same sequence sees nothing of the first; the first's state comes back from disk",
  { timeout: 120_000 },
  async () => {
    const B: ChatMessage[] = [msg('system', system('Beta')), msg('user', 'What is the capital of France?')];
    const b = await ask('sb', B);
    const template = commonPrefix(b.turn.promptTokenIds, a2.turn.promptTokenIds);
    assert.ok(b.cached <= template && template < 16, `of session A, B reused only the template's first tokens both share (${b.cached})`);
    assert.deepEqual(b.turn.responseTokenIds, await reference(b.turn.promptTokenIds), 'B answers as if A had never been served');

    // A's sequence went to B; A's next turn reads A's evaluated prompt back from disk.
    const a3 = await ask('sa', [...A2(), msg('assistant', a2.content), msg('user', 'Thanks.')]);
    assert.ok(
      a3.cached >= a2.turn.promptTokenIds.length - 2,
      `A's state kept across B's turn: ${a3.cached} of ${a3.turn.promptTokenIds.length}`,
    );
    assert.deepEqual(a3.turn.responseTokenIds, await reference(a3.turn.promptTokenIds));

    // A new session with A's system prompt reuses it (B's state now kept on disk, A's in the sequence).
    const c = await ask('sc', [A[0], msg('user', 'Name a river.')]);
    const sys = commonPrefix(c.turn.promptTokenIds, a1.turn.promptTokenIds);
    assert.ok(sys > 200 && c.cached >= sys, `the system prompt seen before is reused: ${c.cached} (shared ${sys})`);
    assert.deepEqual(c.turn.responseTokenIds, await reference(c.turn.promptTokenIds));
  },
);

/** Publishes version `v`: an adapter on `targets` of the layers `layers` (the tiny model has 2). */
async function publish(v: number, targets: string[], layers: number[]): Promise<{ wv: WeightVersion; path: string }> {
  const { hidden, kvHeads, headDim, ffn } = tiny.config;
  const outOf: Record<string, number> = {
    attn_q: hidden,
    attn_k: kvHeads * headDim,
    attn_v: kvHeads * headDim,
    attn_output: hidden,
    ffn_up: ffn,
  };
  const rank = 4;
  let seed = v * 1000;
  const rnd = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return (seed / 2 ** 31 - 0.5) * 0.8;
  };
  const pairs: LoraPair[] = layers.flatMap((l) =>
    targets.map((t) => ({
      target: `blk.${l}.${t}.weight`,
      inFeatures: hidden,
      outFeatures: outOf[t],
      a: Float32Array.from({ length: rank * hidden }, rnd),
      b: Float32Array.from({ length: outOf[t] * rank }, rnd),
    })),
  );
  const { ref, wv } = await storeLoraVersion(
    join(dir, 'weights'),
    {
      modelId: 'tiny',
      version: v,
      base: { name: 'tiny', sha256: tiny.sha256 },
      lora: { rank, alpha: 8, targets: ['q'], lastLayers: 0 } as never,
    },
    pairs,
  );
  return { wv, path: ref.adapterPath! };
}

test(
  'after a swap to an adapter that changes the KV cache, a prompt is evaluated anew; one that leaves it shares the base states',
  { timeout: 180_000 },
  async () => {
    const v1 = await publish(1, ['attn_q', 'attn_k', 'attn_v', 'attn_output'], [0, 1]);
    await gw.llama!.offer(v1.wv);
    assert.equal(gw.llama!.version, 1);
    const under1 = await ask('sa-v1', A);
    assert.ok(under1.cached < 8, `nothing evaluated by the base reused under v1 (${under1.cached})`);
    assert.equal(under1.turn.policyVersion, 1);
    assert.deepEqual(under1.turn.responseTokenIds, await reference(under1.turn.promptTokenIds, v1.path));

    // Only the last layer's attn_q and attn_output: the cached keys and values are the base's.
    const v2 = await publish(2, ['attn_q', 'attn_output'], [tiny.config.layers - 1]);
    await gw.llama!.offer(v2.wv);
    assert.equal(gw.llama!.version, 2);
    const under2 = await ask('sa-v2', A);
    assert.ok(under2.cached > 200, `the base's kept states serve v2: ${under2.cached} of ${under2.turn.promptTokenIds.length}`);
    assert.equal(under2.turn.policyVersion, 2);
    assert.deepEqual(under2.turn.responseTokenIds, await reference(under2.turn.promptTokenIds, v2.path));
  },
);
