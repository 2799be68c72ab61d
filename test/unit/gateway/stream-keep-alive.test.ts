/**
 * A streamed answer whose first token is slow to come (a long prompt on a CPU takes minutes):
 * the gateway sends SSE keep-alive comments while the stream is silent, so clients that give up
 * on a silent body (fetch's 300 s) keep waiting, and the answer parses as if they were not there.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startGateway, tempHome, type StartedGateway } from '../../integration/gateway/support.ts';

let upstream: Server;
let home: Awaited<ReturnType<typeof tempHome>>;
let g: StartedGateway;

before(async () => {
  // An engine that takes 600 ms before its answer.
  upstream = createServer((req, res) => {
    req.resume().on('end', () =>
      setTimeout(
        () =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              id: 'u',
              object: 'chat.completion',
              choices: [{ index: 0, message: { role: 'assistant', content: 'late but here' }, finish_reason: 'stop' }],
            }),
          ),
        600,
      ),
    );
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  home = await tempHome('keep-alive');
  g = await startGateway({
    home: home.dir,
    upstream: { baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`, requestLogprobs: false },
    streams: { keepAliveMs: 100 },
  });
});
after(async () => {
  await g?.gw.stop();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await home?.cleanup();
});

test('a silent stream gets keep-alive comments before its first token, and the answer is unchanged', async () => {
  const res = await fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  const events = text.split('\n\n').filter(Boolean);
  const firstContent = events.findIndex((e) => e.includes('late but here'));
  const comments = events.filter((e, i) => e === ': keep-alive' && i < firstContent);
  assert.ok(comments.length >= 2, `keep-alive comments while the engine was silent: ${JSON.stringify(events)}`);
  const data = events.filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]').map((e) => JSON.parse(e.slice(6)));
  assert.equal(data.map((d) => d.choices[0]?.delta?.content ?? '').join(''), 'late but here');
  assert.ok(text.endsWith('data: [DONE]\n\n'));
});
