import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  appendHint,
  buildSample,
  createPolicyTeacher,
  createUpstreamTeacher,
  type Teacher,
} from '../../../processors/sample-builder/index.ts';
import type { ChatMessage, Judgement } from '../../../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { exampleJudgement, examplePair, examplePairTurn } from '../../support/fixtures.ts';
import { startFakeOpenAI } from './support/fake-openai.ts';

/** A fake teacher: log-prob −0.1·(i+1) per position; records what it was asked. */
function fakeTeacher(): Teacher & { calls: Array<{ messages: ChatMessage[]; ids: number[]; topK?: number }> } {
  const calls: Array<{ messages: ChatMessage[]; ids: number[]; topK?: number }> = [];
  return {
    id: 'fake',
    calls,
    async score(messages, ids, opts) {
      calls.push({ messages, ids, topK: opts?.topK });
      const logprobs = ids.map((_, i) => -0.1 * (i + 1));
      return opts?.topK ? { logprobs, topK: ids.map((id) => ({ ids: [id, 0], logprobs: [-0.1, -3] })) } : { logprobs };
    },
  };
}

const judgement = (score: number, hint: string | null, over: Partial<Judgement> = {}) => exampleJudgement({ score, hint, ...over });
const HINT = 'Answer in one short sentence.';

describe('sample builder: methods', () => {
  it('RL: reward = score over every response token, no teacher term; score 0 → no sample', async () => {
    const teacher = fakeTeacher();
    const { sample } = await buildSample(judgement(-1, HINT), { method: 'rl', teacher }, { now: 7 });
    assert.ok(sample);
    assert.equal(sample.sampleId, '3b8f4a52-7f43-4d8a-9d1e-0a5c2b7e9f10:RL');
    assert.equal(sample.method, 'RL');
    assert.equal(sample.reward, -1);
    assert.equal(sample.teacherLogprobs, null);
    assert.equal(sample.teacherTopK, null);
    assert.deepEqual(sample.tokens, [256, 1, 2, 3, 72, 105, 33]);
    assert.equal(sample.promptLength, 4);
    assert.equal(sample.responseLength, 3);
    assert.deepEqual(sample.lossMask, [1, 1, 1]);
    assert.deepEqual(sample.rolloutLogprobs, [-0.5, -0.25, -1]);
    assert.equal(sample.policyVersion, 0);
    assert.equal(sample.policyModelId, 'turnstream-tiny');
    assert.equal(sample.userId, 'alice');
    assert.equal(sample.sessionId, 'session-1');
    assert.equal(sample.weight, 1);
    assert.equal(sample.judgeId, 'embedded');
    assert.equal(sample.createdAt, 7);
    assert.equal(teacher.calls.length, 0, 'RL never asks the teacher');
    assert.deepEqual(await buildSample(judgement(0, HINT), { method: 'rl', teacher }), { sample: null, skipped: 'zero-score' });
  });

  it('OPD: the teacher scores the ORIGINAL response under the hinted prompt; reward 0; no hint → no sample', async () => {
    const teacher = fakeTeacher();
    const { sample } = await buildSample(judgement(1, HINT), { method: 'opd', teacher });
    assert.ok(sample);
    assert.equal(sample.sampleId.endsWith(':OPD'), true);
    assert.equal(sample.reward, 0);
    assert.deepEqual(sample.teacherLogprobs, [-0.1, -0.2, -0.30000000000000004]);
    assert.deepEqual(teacher.calls[0].ids, [72, 105, 33]);
    const msgs = teacher.calls[0].messages;
    assert.equal(msgs.length, 2);
    assert.equal(msgs[1].content, "Hello 👋\n\n[user's hint / instruction]\nAnswer in one short sentence.");
    assert.equal(msgs[0].content, 'Be brief.');
    assert.deepEqual(await buildSample(judgement(-1, null), { method: 'opd', teacher }), { sample: null, skipped: 'no-hint' });
  });

  it('COMBINED: hint+score → both; hint only → teacher, reward 0; score only → teacherLogprobs exactly null; neither → none', async () => {
    const teacher = fakeTeacher();
    const both = (await buildSample(judgement(-1, HINT), { teacher })).sample!;
    assert.equal(both.method, 'COMBINED');
    assert.equal(both.reward, -1);
    assert.equal(both.teacherLogprobs?.length, 3);
    const hintOnly = (await buildSample(judgement(0, HINT), { teacher })).sample!;
    assert.equal(hintOnly.reward, 0);
    assert.equal(hintOnly.teacherLogprobs?.length, 3);
    const scoreOnly = (await buildSample(judgement(1, null), { teacher })).sample!;
    assert.equal(scoreOnly.reward, 1);
    assert.equal(scoreOnly.teacherLogprobs, null);
    assert.deepEqual(await buildSample(judgement(0, null), { teacher }), { sample: null, skipped: 'no-signal' });
    assert.equal(teacher.calls.length, 2);
  });

  it("top-k: the teacher's top-k per position is carried", async () => {
    const teacher = fakeTeacher();
    const s = (await buildSample(judgement(1, HINT), { teacher, topK: 2 })).sample!;
    assert.equal(teacher.calls[0].topK, 2);
    assert.deepEqual(s.teacherTopK, [
      { ids: [72, 0], logprobs: [-0.1, -3] },
      { ids: [105, 0], logprobs: [-0.1, -3] },
      { ids: [33, 0], logprobs: [-0.1, -3] },
    ]);
  });

  it('skips untokenized turns and empty responses', async () => {
    const untok = exampleJudgement({
      score: 1,
      pair: examplePair({ turn: examplePairTurn({ tokenized: false, promptTokenIds: [], responseTokenIds: [], responseLogprobs: [] }) }),
    });
    assert.deepEqual(await buildSample(untok), { sample: null, skipped: 'untokenized' });
    const empty = exampleJudgement({
      score: 1,
      pair: examplePair({ turn: examplePairTurn({ responseTokenIds: [], responseLogprobs: [] }) }),
    });
    assert.deepEqual(await buildSample(empty), { sample: null, skipped: 'empty-response' });
  });

  it('an end-marker pair with nothing trainable becomes a fully masked sample (unless disabled)', async () => {
    const end = exampleJudgement({
      score: 0,
      hint: null,
      votes: [],
      pair: examplePair({ nextState: [], feedback: [], endMarker: 'IDLE_TIMEOUT' }),
    });
    const s = (await buildSample(end, { method: 'rl' })).sample!;
    assert.deepEqual(s.lossMask, [0, 0, 0]);
    assert.equal(s.reward, 0);
    assert.equal(s.teacherLogprobs, null);
    assert.equal((await buildSample(end, { maskedEndSamples: false })).sample, null);
    // An end-marker pair WITH a score trains normally.
    assert.deepEqual((await buildSample({ ...end, score: 1 }, { method: 'rl' })).sample!.lossMask, [1, 1, 1]);
  });

  it('rejects misaligned rollout log-probs and a teacher with the wrong length', async () => {
    const bad = exampleJudgement({ score: 1, pair: examplePair({ turn: examplePairTurn({ responseLogprobs: [-1] }) }) });
    await assert.rejects(
      buildSample(bad),
      (e: unknown) => e instanceof TurnstreamError && e.code === ErrorCodes.INVALID_INPUT && !e.retriable,
    );
    const short: Teacher = { id: 's', score: async () => ({ logprobs: [-1] }) };
    await assert.rejects(
      buildSample(judgement(1, HINT), { teacher: short }),
      (e: unknown) => e instanceof TurnstreamError && e.code === ErrorCodes.UPSTREAM && !e.retriable,
    );
  });
});

describe('appendHint', () => {
  const m = (role: string, content: string | null): ChatMessage => ({ role, content, name: null, toolCallId: null, toolCalls: [] });
  it('appends to the LAST user message and leaves the input alone', () => {
    const input = [m('user', 'first'), m('assistant', 'a'), m('user', 'second'), m('tool', 'r')];
    const out = appendHint(input, 'Be brief.');
    assert.equal(out[2].content, "second\n\n[user's hint / instruction]\nBe brief.");
    assert.equal(out[0].content, 'first');
    assert.equal(input[2].content, 'second');
  });
  it('adds a user message when there is none', () => {
    assert.deepEqual(
      appendHint([m('system', 's')], 'Be brief.').map((x) => [x.role, x.content]),
      [
        ['system', 's'],
        ['user', "[user's hint / instruction]\nBe brief."],
      ],
    );
  });
});

describe('policy teacher', () => {
  it("renders the hinted messages with the policy's template, leaving room for the response, and scores the response ids", async () => {
    const seen: unknown[] = [];
    const policy = {
      modelId: 'turnstream-tiny',
      version: 0,
      config: { contextLength: 16 },
      renderPrompt(messages: Array<{ role: string; content: string }>, max?: number) {
        seen.push({ messages, max });
        return { ids: [256, 1] };
      },
      async score(promptIds: number[], responseIds: number[]) {
        seen.push({ promptIds, responseIds });
        return responseIds.map(() => -0.5);
      },
    };
    const t = createPolicyTeacher(policy);
    assert.equal(t.id, 'policy:turnstream-tiny@v0');
    const messages: ChatMessage[] = [
      { role: 'developer', content: 'dev', name: null, toolCallId: null, toolCalls: [] },
      {
        role: 'assistant',
        content: null,
        name: null,
        toolCallId: null,
        toolCalls: [{ id: 'c', type: 'function', name: 'f', arguments: '{}' }],
      },
      { role: 'user', content: 'hi', name: null, toolCallId: null, toolCalls: [] },
    ];
    assert.deepEqual(await t.score(messages, [7, 8, 9]), { logprobs: [-0.5, -0.5, -0.5] });
    assert.deepEqual(seen[0], {
      messages: [
        { role: 'system', content: 'dev' },
        { role: 'assistant', content: 'f({})' },
        { role: 'user', content: 'hi' },
      ],
      max: 12,
    });
    assert.deepEqual(seen[1], { promptIds: [256, 1], responseIds: [7, 8, 9] });
    await assert.rejects(t.score(messages, new Array(14).fill(1)), /no room/);
    await assert.rejects(t.score(messages, [1], { topK: 5 }), /top-k/);
  });
});

describe('upstream teacher (vLLM-style /tokenize + prompt_logprobs)', () => {
  const servers: Array<{ close(): Promise<void> }> = [];
  after(() => Promise.all(servers.map((s) => s.close())));

  it("tokenizes the hinted chat, sends prompt+response ids, reads each response token's log-prob and top-k", async () => {
    let fails = 1;
    const s = await startFakeOpenAI((r) => {
      if (r.url === '/tokenize') return { body: { tokens: [1, 2], count: 2 } };
      if (fails-- > 0) return { status: 503, body: 'warming up' };
      return {
        body: {
          choices: [
            {
              text: 'x',
              prompt_logprobs: [
                null,
                { '2': { logprob: -1, rank: 1 } },
                { '7': { logprob: -0.5, rank: 2 }, '3': { logprob: -0.2, rank: 1 } },
                { '8': { logprob: -0.1, rank: 1 }, '4': { logprob: -3, rank: 2 }, '5': { logprob: -4, rank: 3 } },
              ],
            },
          ],
        },
      };
    });
    servers.push(s);
    const t = createUpstreamTeacher({ baseUrl: s.baseUrl, model: 'base', minBackoffMs: 5 });
    const messages: ChatMessage[] = [{ role: 'user', content: 'q', name: null, toolCallId: null, toolCalls: [] }];
    const out = await t.score(messages, [7, 8], { topK: 2 });
    assert.deepEqual(out.logprobs, [-0.5, -0.1]);
    assert.deepEqual(out.topK, [
      { ids: [3, 7], logprobs: [-0.2, -0.5] },
      { ids: [8, 4], logprobs: [-0.1, -3] },
    ]);
    const tok = s.requests[0];
    assert.equal(tok.url, '/tokenize');
    assert.deepEqual(tok.body, { model: 'base', messages: [{ role: 'user', content: 'q' }], add_generation_prompt: true });
    const comp = s.requests.at(-1)!;
    assert.equal(comp.url, '/v1/completions');
    assert.deepEqual(comp.body.prompt, [1, 2, 7, 8]);
    assert.equal(comp.body.prompt_logprobs, 2);
    assert.equal(s.requests.length, 3, 'the 503 was retried');
  });

  it('an engine without prompt_logprobs is a clear, non-retriable error', async () => {
    const s = await startFakeOpenAI((r) => (r.url === '/tokenize' ? { body: { tokens: [1] } } : { body: { choices: [{ text: 'x' }] } }));
    servers.push(s);
    await assert.rejects(
      createUpstreamTeacher({ baseUrl: s.baseUrl, model: 'b' }).score([], [5]),
      (e: unknown) => e instanceof TurnstreamError && !e.retriable && /prompt_logprobs/.test(e.message),
    );
  });
});
