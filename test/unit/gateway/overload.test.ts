/**
 * The gateway under more load than it takes (no Kafka; a local upstream engine the test
 * controls): beyond the generation slots and the queue a request gets 429 with Retry-After, and
 * a streaming client that stops reading is cut, its generation aborted, while others are served.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startGateway, tempHome, type StartedGateway } from '../../integration/gateway/support.ts';
import { waitFor } from '../../support/wait-for.ts';

let upstream: Server;
let home: Awaited<ReturnType<typeof tempHome>>;
let g: StartedGateway;
/** Upstream calls waiting for the test to let them answer. */
const held: Array<() => void> = [];
let upstreamAborted = 0;

before(async () => {
  upstream = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as { stream?: boolean; messages: Array<{ content: string }> };
      const prompt = body.messages.at(-1)!.content;
      res.on('close', () => {
        if (!res.writableFinished) upstreamAborted++;
      });
      if (prompt === 'flood' && body.stream) {
        // ~24 MB of deltas as fast as the socket takes them: more than any kernel buffers hold.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const piece = 'x'.repeat(1000);
        let i = 0;
        const pump = (): void => {
          while (i < 24_000 && !res.destroyed) {
            i++;
            const ok = res.write(
              `data: ${JSON.stringify({ id: 'u', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`,
            );
            if (!ok) return void res.once('drain', pump);
          }
          if (!res.destroyed) res.end('data: [DONE]\n\n');
        };
        return pump();
      }
      const answer = () =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'u',
            object: 'chat.completion',
            choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          }),
        );
      if (prompt === 'hold') held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  home = await tempHome('overload');
  g = await startGateway({
    home: home.dir,
    upstream: { baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`, requestLogprobs: false },
    admission: { maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 10_000 },
    streams: { stallTimeoutMs: 400, maxBufferedBytes: 256 * 1024 },
  });
});
after(async () => {
  await g?.gw.stop();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await home?.cleanup();
});

const chat = (content: string, stream = false) =>
  fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': `u-${content}` },
    body: JSON.stringify({ messages: [{ role: 'user', content }], stream }),
  });

test('beyond the slots and the queue: 429 in OpenAI shape with Retry-After; the admitted ones finish', async () => {
  const running = chat('hold');
  await waitFor('the first call to reach the engine', () => held.length === 1, { timeoutMs: 10_000 });
  const queued = chat('queued');
  await waitFor('the second call to queue', () => g.gw.admission.waitingCount === 1, { timeoutMs: 10_000 });
  const refused = await chat('refused');
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get('retry-after')) >= 1, 'Retry-After in seconds');
  const body = (await refused.json()) as { error: { type: string; code: string } };
  assert.deepEqual([body.error.type, body.error.code], ['rate_limit_error', 'TS_ERR_OVERLOADED']);
  held.shift()!();
  assert.equal((await running).status, 200);
  assert.equal((await queued).status, 200);
  assert.equal(g.gw.admission.running, 0);
  assert.equal(g.gw.admission.maxConcurrent, 1, 'the limit an engine sizes itself by');
});

test('a streaming client that stops reading is cut, its generation aborted and nothing captured; others are served meanwhile', async () => {
  const depth = g.gw.outbox.depth;
  const aborted = upstreamAborted;
  const { port } = new URL(g.url);
  const sock = net.connect(Number(port), '127.0.0.1');
  await new Promise<void>((r) => sock.once('connect', () => r()));
  const payload = JSON.stringify({ messages: [{ role: 'user', content: 'flood' }], stream: true });
  sock.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
  sock.pause(); // never reads: the kernel buffers fill, then the gateway's
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  let received = '';
  sock.on('data', (d: Buffer) => (received = (received + d.toString('latin1')).slice(-200)));
  sock.on('error', () => undefined);
  // Meanwhile a normal call is answered: the stuck stream holds no generation slot for long.
  const normal = await chat('normal');
  assert.equal(normal.status, 200);
  const cutCount = async () =>
    /turnstream_gateway_streams_cut_total\{reason="(stalled|buffer|budget)"[^}]*\} 1/.test(await (await fetch(`${g.url}/metrics`)).text());
  await waitFor('the stream to be cut', cutCount, { timeoutMs: 20_000, intervalMs: 100 });
  // What the kernel still held reaches the client, then the end of a cut stream.
  sock.resume();
  await closed;
  await waitFor('the upstream generation to be aborted', () => upstreamAborted > aborted, { timeoutMs: 10_000 });
  assert.equal(g.gw.outbox.depth, depth + 1, 'only the normal call was captured');
  assert.ok(!received.includes('[DONE]') || received.includes('TS_ERR_ABORTED'), 'the cut stream did not end as a finished answer');
  assert.equal(g.gw.admission.running, 0);
});
