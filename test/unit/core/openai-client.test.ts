/**
 * The one OpenAI client (core/openai-client.ts) against a scripted endpoint: it sends no
 * credentials without a key, never retries on its own, and a failure reads as what the endpoint
 * did (its status and body, no answer, a body that is not JSON, the caller's abort).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { jsonOf, openAIClient, openAIFailure } from '../../../core/openai-client.ts';
import { chat, startFakeOpenAI, type FakeServer } from '../processors/support/fake-openai.ts';

const servers: FakeServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

const messages = [{ role: 'user' as const, content: 'hi' }];

/** What one call threw, read as a failure. */
async function failureOf(call: Promise<unknown>) {
  try {
    await call;
  } catch (err) {
    return openAIFailure(err);
  }
  return assert.fail('the call did not fail');
}

describe('openAIClient', () => {
  it('sends the key as a bearer token, and no Authorization header without one', async () => {
    const s = await startFakeOpenAI(() => chat('ok'));
    servers.push(s);
    await openAIClient({ baseURL: s.baseUrl, apiKey: 'k' }).chat.completions.create({ model: 'm', messages });
    await openAIClient({ baseURL: `${s.baseUrl}//` }).chat.completions.create({ model: 'm', messages });
    assert.deepEqual(
      s.requests.map((r) => [r.url, r.headers.authorization]),
      [
        ['/v1/chat/completions', 'Bearer k'],
        ['/v1/chat/completions', undefined],
      ],
    );
  });

  it('never retries: a 503 is one request and a status failure with the body', async () => {
    const s = await startFakeOpenAI(() => ({ status: 503, body: 'warming up' }));
    servers.push(s);
    const f = await failureOf(openAIClient({ baseURL: s.baseUrl }).chat.completions.create({ model: 'm', messages }));
    assert.deepEqual(f, { kind: 'status', status: 503, body: 'warming up' });
    assert.equal(s.requests.length, 1);
  });

  it("an OpenAI error body is kept as sent; a JSON body without `error` is the package's to drop", async () => {
    const s = await startFakeOpenAI((_, n) => ({ status: 401, body: n === 0 ? { error: { message: 'bad key' } } : {} }));
    servers.push(s);
    const c = openAIClient({ baseURL: s.baseUrl });
    assert.deepEqual(await failureOf(c.chat.completions.create({ model: 'm', messages })), {
      kind: 'status',
      status: 401,
      body: '{"error":{"message":"bad key"}}',
    });
    assert.deepEqual(await failureOf(c.chat.completions.create({ model: 'm', messages })), { kind: 'status', status: 401, body: '' });
  });

  it('no answer is unreachable with the network error as the cause; a 200 that is not JSON says so', async () => {
    const down = await failureOf(openAIClient({ baseURL: 'http://127.0.0.1:9/v1' }).chat.completions.create({ model: 'm', messages }));
    assert.equal(down.kind, 'unreachable');
    assert.ok(down.kind === 'unreachable' && down.cause instanceof TypeError && down.reason === 'fetch failed', JSON.stringify(down));
    const s = await startFakeOpenAI(() => ({ body: 'not json' }));
    servers.push(s);
    const f = await failureOf(openAIClient({ baseURL: s.baseUrl }).chat.completions.create({ model: 'm', messages }));
    assert.equal(f.kind, 'not-json');
  });

  it("the caller's abort is aborted; the client's own timeout is timeout", async () => {
    const s = await startFakeOpenAI(() => ({ delayMs: 1_000, ...chat('late') }));
    servers.push(s);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const c = openAIClient({ baseURL: s.baseUrl });
    assert.deepEqual(await failureOf(c.chat.completions.create({ model: 'm', messages }, { signal: ac.signal })), { kind: 'aborted' });
    const slow = openAIClient({ baseURL: s.baseUrl, timeoutMs: 50 });
    assert.deepEqual(await failureOf(slow.chat.completions.create({ model: 'm', messages })), { kind: 'timeout' });
  });

  it('jsonOf parses a body the package handed over as text', () => {
    assert.deepEqual(jsonOf('{"a":1}'), { a: 1 });
    assert.deepEqual(jsonOf({ a: 1 }), { a: 1 });
    assert.throws(() => jsonOf('nope'), SyntaxError);
  });
});
