import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import {
  generate,
  logSoftmaxRow,
  sampleToken,
  scoreTokens,
  topK,
  type GeneratedToken,
  type GenerateOptions,
} from '../../../../policy/builtin/generate.ts';
import { mulberry32 } from '../../../../core/index.ts';
import { TransformerModel } from '../../../../policy/builtin/model.ts';
import { ByteTokenizer } from '../../../../policy/builtin/tokenizer.ts';
import { TINY, close } from '../../../support/tfjs-helpers.ts';

const tok = new ByteTokenizer();
const model = TransformerModel.init({ ...TINY, vocabSize: tok.vocabSize }, 11);
const prompt = [tok.bos, tok.user, ...tok.encode('hi'), tok.end, tok.assistant];

async function collect(opts: GenerateOptions, p = prompt, m = model): Promise<GeneratedToken[]> {
  const out: GeneratedToken[] = [];
  for await (const t of generate(m, p, opts)) out.push(t);
  return out;
}

/** A model whose logits are a fixed, chosen distribution regardless of input. */
function scriptedModel(bias: number[]): TransformerModel {
  const m = TransformerModel.init({ ...TINY, vocabSize: tok.vocabSize, tiedEmbeddings: false }, 0);
  m.weights.get('head.w')!.assign(tf.zeros(m.weights.get('head.w')!.shape));
  m.weights.get('lnf.g')!.assign(tf.zeros([TINY.dModel]));
  // Output = lnf.b · head.w = 0; inject a bias through an extra dimension: lnf.b = e0, head.w row 0 = bias.
  const e0 = new Array(TINY.dModel).fill(0);
  e0[0] = 1;
  m.weights.get('lnf.b')!.assign(tf.tensor1d(e0));
  const head = tf.zeros([TINY.dModel, tok.vocabSize]).bufferSync();
  bias.forEach((b, i) => head.set(b, 0, i));
  m.weights.get('head.w')!.assign(head.toTensor());
  return m;
}

test('seeded sampling is deterministic; different seeds differ', async () => {
  const a = await collect({ maxTokens: 20, seed: 42 });
  const b = await collect({ maxTokens: 20, seed: 42 });
  const c = await collect({ maxTokens: 20, seed: 43 });
  assert.deepEqual(a, b);
  assert.notDeepEqual(
    a.map((t) => t.id),
    c.map((t) => t.id),
  );
});

test('respects maxTokens; log-probs are ≤ 0 and one per token; only the last token has a finish reason', async () => {
  const out = await collect({ maxTokens: 7, seed: 1 });
  assert.ok(out.length >= 1 && out.length <= 7);
  assert.ok(out.every((t) => t.logprob <= 0 && Number.isFinite(t.logprob)));
  assert.ok(out.slice(0, -1).every((t) => t.finishReason === undefined));
  assert.ok(out.at(-1)!.finishReason);
});

test('prompt + response never exceed the context length', async () => {
  const long = [tok.bos, ...new Array(TINY.contextLength - 4).fill(97), tok.assistant];
  const out = await collect({ maxTokens: 100, temperature: 0 }, long);
  assert.ok(long.length + out.length <= TINY.contextLength);
});

test('score() of generated tokens equals the log-probs generate() reported', async () => {
  for (const opts of [{ seed: 3, temperature: 1 }, { seed: 4, temperature: 0.7, topP: 0.9 }, { temperature: 0 }]) {
    const out = await collect({ ...opts, maxTokens: 25 });
    const scored = await scoreTokens(
      model,
      prompt,
      out.map((t) => t.id),
    );
    assert.equal(scored.length, out.length);
    scored.forEach((s, i) => close(s, out[i].logprob, 1e-4, `token ${i}`));
  }
});

test('greedy (temperature 0) picks the argmax', async () => {
  const bias = new Array(tok.vocabSize).fill(0);
  bias[104] = 5; // 'h'
  const m = scriptedModel(bias);
  const out = await collect({ maxTokens: 3, temperature: 0 }, prompt, m);
  assert.deepEqual(
    out.map((t) => t.id),
    [104, 104, 104],
  );
  assert.equal(out.map((t) => t.text).join(''), 'hhh');
  m.dispose();
});

test('<|end|> stops generation and is yielded with no text', async () => {
  const bias = new Array(tok.vocabSize).fill(0);
  bias[tok.end] = 50;
  const m = scriptedModel(bias);
  const out = await collect({ maxTokens: 10, seed: 1 }, prompt, m);
  assert.equal(out.length, 1);
  assert.deepEqual(out[0], { id: tok.end, logprob: out[0].logprob, drawnLogprob: out[0].drawnLogprob, text: '', finishReason: 'stop' });
  m.dispose();
});

test('a stop string ends generation and is not part of the text', async () => {
  // Sample only from 'a', 'b' and 'X' so a stop string "bX" shows up quickly.
  const bias = new Array(tok.vocabSize).fill(-100);
  for (const c of 'abX') bias[c.charCodeAt(0)] = 0;
  const m = scriptedModel(bias);
  for (let seed = 0; seed < 5; seed++) {
    const unstopped = await collect({ maxTokens: 40, seed }, prompt, m);
    const full = unstopped.map((t) => t.text).join('');
    const out = await collect({ maxTokens: 40, seed, stop: ['bX'] }, prompt, m);
    const text = out.map((t) => t.text).join('');
    const at = full.indexOf('bX');
    if (at >= 0) {
      assert.equal(text, full.slice(0, at));
      assert.equal(out.at(-1)!.finishReason, 'stop');
      assert.equal(out.length, at + 2, 'the stop string tokens are yielded (ids for training), without text');
    } else {
      assert.equal(text, full);
    }
  }
  m.dispose();
});

test('a multi-byte character streams as one piece of text once complete', async () => {
  const bytes = tok.encode('é'); // 2 bytes
  const bias = new Array(tok.vocabSize).fill(-100);
  bias[bytes[0]] = 0;
  const m = scriptedModel(bias);
  const out = await collect({ maxTokens: 1, temperature: 0 }, prompt, m);
  assert.equal(out[0].text, '\uFFFD', 'an incomplete character at the end is flushed as U+FFFD');
  m.dispose();
});

test('abort stops between tokens with TS_ERR_ABORTED', async () => {
  const ac = new AbortController();
  const seen: number[] = [];
  await assert.rejects(
    async () => {
      for await (const t of generate(model, prompt, { maxTokens: 30, seed: 1, signal: ac.signal })) {
        seen.push(t.id);
        if (seen.length === 2) ac.abort();
      }
    },
    { code: 'TS_ERR_ABORTED' },
  );
  assert.equal(seen.length, 2);
});

test('two generations interleave per token and each matches its solo run', async () => {
  const solo1 = await collect({ maxTokens: 10, seed: 5 });
  const solo2 = await collect({ maxTokens: 10, seed: 6 });
  const order: number[] = [];
  const run = async (seed: number, tag: number): Promise<GeneratedToken[]> => {
    const out: GeneratedToken[] = [];
    for await (const t of generate(model, prompt, { maxTokens: 10, seed })) {
      out.push(t);
      order.push(tag);
    }
    return out;
  };
  const [c1, c2] = await Promise.all([run(5, 1), run(6, 2)]);
  assert.deepEqual(c1, solo1);
  assert.deepEqual(c2, solo2);
  if (c1.length > 1 && c2.length > 1) assert.notDeepEqual(order, [...order].sort(), 'interleaved, not one after the other');
});

test('generation leaks no tensors, also when the consumer stops early', async () => {
  await collect({ maxTokens: 3, seed: 1 });
  const before = tf.memory().numTensors;
  await collect({ maxTokens: 8, seed: 2 });
  for await (const _ of generate(model, prompt, { maxTokens: 8, seed: 3 })) break;
  await collect({ maxTokens: 8, seed: 4, topLogprobs: 20 });
  await scoreTokens(model, prompt, [1, 2, 3]);
  assert.equal(tf.memory().numTensors, before);
});

test('bad prompts and options are input errors', async () => {
  await assert.rejects(collect({}, []), { code: 'TS_ERR_INVALID_INPUT' });
  await assert.rejects(collect({}, new Array(TINY.contextLength).fill(1)), { code: 'TS_ERR_INVALID_INPUT' });
  await assert.rejects(collect({ topP: 0 }), { code: 'TS_ERR_INVALID_INPUT' });
  await assert.rejects(collect({}, [9999]), { code: 'TS_ERR_INVALID_INPUT' });
});

test('topLogprobs: the N most likely ids of each step at temperature 1, sorted; same tokens as without; absent unless asked', async () => {
  const bias = new Array(tok.vocabSize).fill(-20);
  [3, 1, 2, 0.5, 0].forEach((b, i) => (bias[97 + i] = b)); // a > c > b > d > e
  const m = scriptedModel(bias);
  const expected = logSoftmaxRow(bias);
  const plain = await collect({ maxTokens: 4, seed: 9, temperature: 0.5 }, prompt, m);
  const out = await collect({ maxTokens: 4, seed: 9, temperature: 0.5, topLogprobs: 3 }, prompt, m);
  assert.deepEqual(
    out.map(({ top: _, ...t }) => t),
    plain,
    'asking for alternatives does not change the sampling',
  );
  assert.ok(plain.every((t) => t.top === undefined));
  for (const t of out) {
    assert.deepEqual(
      t.top!.map((x) => x.id),
      [97, 99, 98],
    );
    t.top!.forEach((x) => close(x.logprob, expected[x.id], 1e-4));
    const same = t.top!.find((x) => x.id === t.id);
    if (same) assert.equal(same.logprob, t.logprob, 'the sampled id has the same log-prob in both places');
  }
  await assert.rejects(collect({ topLogprobs: 1.5 }), { code: 'TS_ERR_INVALID_INPUT' });
  m.dispose();
});

test('topK: largest first, ties by lower id, k beyond the vocabulary', () => {
  assert.deepEqual(topK([-1, -3, -0.5, -1, -2], 3), [
    { id: 2, logprob: -0.5 },
    { id: 0, logprob: -1 },
    { id: 3, logprob: -1 },
  ]);
  assert.deepEqual(
    topK([-1, -2], 5).map((x) => x.id),
    [0, 1],
  );
  assert.deepEqual(topK([-1], 0), []);
});

test('top-p keeps only the nucleus', () => {
  const logp = Float64Array.from([0.6, 0.3, 0.1].map(Math.log));
  const rand = mulberry32(1);
  const seen = new Set<number>();
  for (let i = 0; i < 200; i++) seen.add(sampleToken(logp, 1, 0.5, rand));
  assert.deepEqual([...seen], [0]);
  for (let i = 0; i < 200; i++) seen.add(sampleToken(logp, 1, 0.85, rand));
  assert.deepEqual([...seen].sort(), [0, 1]);
});

test.after(() => model.dispose());
