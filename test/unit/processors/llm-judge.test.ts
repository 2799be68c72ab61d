import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createLlmJudge, HINT_SYSTEM_PROMPT, PRM_SYSTEM_PROMPT } from '../../../processors/judge/index.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { examplePair } from '../../support/fixtures.ts';
import { chat, startFakeOpenAI, type FakeReply, type FakeRequest } from './support/fake-openai.ts';

const pair = examplePair();
const sorted = (xs: Array<number | null>) => [...xs].sort((a, b) => String(a).localeCompare(String(b)));
const isHint = (r: FakeRequest) => r.body.messages[0].content === HINT_SYSTEM_PROMPT;

/** Serves PRM replies from `prm` and hint replies from `hint`, in arrival order. */
async function scripted(prm: FakeReply[], hint: FakeReply[] = []) {
  let p = 0;
  let h = 0;
  return startFakeOpenAI((r) => (isHint(r) ? (hint[h++] ?? chat('\\boxed{-1}')) : (prm[p++] ?? chat('\\boxed{0}'))));
}

const servers: Array<{ close(): Promise<void> }> = [];
after(() => Promise.all(servers.map((s) => s.close())));

describe('LLM judge', () => {
  it('sends m=3 concurrent votes with temperature 0.6 to /chat/completions and takes the majority; garbage is an invalid vote', async () => {
    const s = await scripted([chat('Reasoning… \\boxed{1}'), chat('I think \\boxed{-1} no wait \\boxed{1}'), chat('no idea')]);
    servers.push(s);
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'judge-m', apiKey: 'k', mode: 'rl' }).judge(pair, { now: 42 });
    assert.equal(s.requests.length, 3);
    for (const r of s.requests) {
      assert.equal(r.url, '/v1/chat/completions');
      assert.equal(r.body.model, 'judge-m');
      assert.equal(r.body.temperature, 0.6);
      assert.equal(r.headers.authorization, 'Bearer k');
      assert.equal(r.body.messages[0].content, PRM_SYSTEM_PROMPT);
    }
    assert.equal(j.score, 1);
    assert.deepEqual(sorted(j.votes.map((v) => v.score)), [1, 1, null]);
    assert.ok(j.votes.every((v) => v.error === null && v.attempts === 1));
    assert.deepEqual(
      j.votes.map((v) => v.index),
      [0, 1, 2],
    );
    assert.equal(j.judgeId, 'llm:judge-m');
    assert.equal(j.judgementId, `${pair.pairId}:llm:judge-m`);
    assert.equal(j.hint, null);
    assert.equal(j.createdAt, 42);
    assert.equal(j.pair, pair);
  });

  it('a tie for the top count scores 0', async () => {
    const s = await scripted([chat('\\boxed{1}'), chat('\\boxed{-1}'), chat('\\boxed{maybe}')]);
    servers.push(s);
    assert.equal((await createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl' }).judge(pair)).score, 0);
  });

  it('all-garbage answers are invalid votes, scored 0 — not a failure', async () => {
    const s = await scripted([chat('lol'), chat(null), chat('\\boxed{7}')]);
    servers.push(s);
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl' }).judge(pair);
    assert.equal(j.score, 0);
    assert.deepEqual(
      j.votes.map((v) => v.score),
      [null, null, null],
    );
  });

  it('retries 500s and 429s with backoff; a vote records its attempts', async () => {
    const s = await scripted([
      { status: 500, body: 'boom' },
      { status: 429, body: {} },
      chat('\\boxed{-1}'),
      chat('\\boxed{-1}'),
      chat('\\boxed{-1}'),
    ]);
    servers.push(s);
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl', minBackoffMs: 5 }).judge(pair);
    assert.equal(j.score, -1);
    assert.equal(s.requests.length, 5);
    assert.equal(
      j.votes.reduce((a, v) => a + v.attempts, 0),
      5,
    );
    assert.ok(j.votes.every((v) => v.error === null));
  });

  it('a vote that times out on every attempt is a failed vote; the rest still decide', async () => {
    let n = 0;
    const s = await startFakeOpenAI(() => (n++ === 0 ? { delayMs: 1_500, ...chat('\\boxed{1}') } : chat('\\boxed{-1}')));
    servers.push(s);
    // retries 0: the first request hangs and fails its vote; the other two answer.
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl', timeoutMs: 150, retries: 0 }).judge(pair);
    assert.equal(j.score, -1);
    const failed = j.votes.filter((v) => v.error !== null);
    assert.equal(failed.length, 1);
    assert.match(failed[0].error!, /TS_ERR_TIMEOUT/);
    assert.equal(failed[0].score, null);
  });

  it('a pair whose votes ALL failed raises JUDGE_FAILED with the reasons (not a 0)', async () => {
    const s = await startFakeOpenAI(() => ({ delayMs: 1_500, ...chat('\\boxed{1}') }));
    servers.push(s);
    await assert.rejects(
      createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl', timeoutMs: 100, retries: 1, minBackoffMs: 5 }).judge(pair),
      (err: unknown) =>
        err instanceof TurnstreamError && err.code === ErrorCodes.JUDGE_FAILED && !err.retriable && /TS_ERR_TIMEOUT/.test(err.message),
    );
    assert.equal(s.requests.length, 6, '3 votes × 2 attempts');
  });

  it('a non-retriable 4xx fails a vote at once; an unreachable judge fails all votes', async () => {
    const s = await startFakeOpenAI(() => ({ status: 401, body: { error: { message: 'bad key' } } }));
    servers.push(s);
    await assert.rejects(createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl' }).judge(pair), /HTTP 401/);
    assert.equal(s.requests.length, 3);
    await assert.rejects(
      createLlmJudge({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', mode: 'rl', retries: 1, minBackoffMs: 5 }).judge(pair),
      (err: unknown) => err instanceof TurnstreamError && err.code === ErrorCodes.JUDGE_FAILED && /TS_ERR_UNAVAILABLE/.test(err.message),
    );
  });

  it('a malformed 200 is retried like an error', async () => {
    const s = await scripted([{ body: 'not json' }, { body: { choices: [] } }, chat('\\boxed{1}'), chat('\\boxed{1}'), chat('\\boxed{1}')]);
    servers.push(s);
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl', minBackoffMs: 5 }).judge(pair);
    assert.equal(j.score, 1);
    assert.equal(s.requests.length, 5);
  });

  it('combined: PRM votes then hint votes; the longest accepted hint wins', async () => {
    const s = await scripted(
      [chat('\\boxed{-1}'), chat('\\boxed{-1}'), chat('\\boxed{1}')],
      [
        chat('[HINT_START]Be brief.[HINT_END] \\boxed{1}'),
        chat('[HINT_START]Answer in one short sentence.[HINT_END]\\boxed{1}'),
        chat('[HINT_START]A much longer hint that is not accepted.[HINT_END]\\boxed{-1}'),
      ],
    );
    servers.push(s);
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'combined', hintVotes: 3 }).judge(pair);
    assert.equal(s.requests.filter(isHint).length, 3);
    assert.equal(j.score, -1);
    assert.equal(j.hint, 'Answer in one short sentence.');
    assert.equal(j.votes.length, 6);
    assert.deepEqual(
      j.votes.map((v) => v.index),
      [0, 1, 2, 3, 4, 5],
    );
    assert.ok(j.votes.slice(0, 3).every((v) => v.hint === null));
  });

  it('opd: hint votes only, score 0; a hint vote with \\boxed{-1} carries no hint', async () => {
    const s = await scripted([], [chat('[HINT_START]Irrelevant text here[HINT_END] \\boxed{-1}')]);
    servers.push(s);
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'opd' }).judge(pair);
    assert.equal(s.requests.length, 1);
    assert.equal(j.score, 0);
    assert.equal(j.hint, null);
    assert.equal(j.votes[0].score, -1);
    assert.equal(j.votes[0].hint, null);
  });

  it('combined: when every hint vote fails the pair fails too', async () => {
    const s = await startFakeOpenAI((r) => (isHint(r) ? { status: 503, body: 'down' } : chat('\\boxed{1}')));
    servers.push(s);
    await assert.rejects(createLlmJudge({ baseUrl: s.baseUrl, model: 'm', retries: 0 }).judge(pair), /all 1 hint votes/);
  });

  it('asks nothing when nothing followed (end marker without feedback): score 0', async () => {
    const s = await scripted([]);
    servers.push(s);
    const j = await createLlmJudge({ baseUrl: s.baseUrl, model: 'm' }).judge(
      examplePair({ nextState: [], feedback: [], endMarker: 'SESSION_DONE' }),
    );
    assert.equal(s.requests.length, 0);
    assert.equal(j.score, 0);
    assert.deepEqual(j.votes, []);
  });

  it('an abort (shutdown) rejects with ABORTED instead of failing votes', async () => {
    const s = await startFakeOpenAI(() => ({ delayMs: 1_500, ...chat('\\boxed{1}') }));
    servers.push(s);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(
      createLlmJudge({ baseUrl: s.baseUrl, model: 'm', mode: 'rl' }).judge(pair, { signal: ac.signal }),
      (err: unknown) => err instanceof TurnstreamError && err.code === ErrorCodes.ABORTED,
    );
  });
});
