/**
 * A body over the limit (the default 4 MiB) gets its 413 in OpenAI's error shape through the
 * official `openai` client, on a real socket, at sizes that used to reset the connection (40 MB,
 * 200 MB: the client said only "fetch failed"), sent whole (Content-Length) and streamed
 * (chunked, 1 GiB). The gateway runs in a process of its own so that its RSS is its own: it
 * discards a refused body instead of keeping it, and stays within 50 MB of its idle RSS.
 * Also: a client that writes its whole body before reading, and the bounds after which a refused
 * body's connection is closed.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import OpenAI, { APIError } from 'openai';
import { startGateway, tempHome, type StartedGateway } from '../../integration/gateway/support.ts';
import { waitFor } from '../../support/wait-for.ts';

const MB = 1024 * 1024;
const LIMIT = 4 * MB; // the gateway's default body limit
// turnstream runs on Linux (the gym's namespaces, cgroups): the RSS comes from /proc, never skipped.

let child: ChildProcess;
let url: string;
let client: OpenAI;

before(async () => {
  const script = fileURLToPath(new URL('./child-gateway.ts', import.meta.url));
  child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^listening (\S+)/.exec(line);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before listening`)));
  });
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => {
  if (!child || child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.stdin!.end();
  await exited;
});

/** Resident set size of the gateway's process (VmRSS, or the peak since the last reset: VmHWM). */
function rss(field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

async function refused(send: () => Promise<unknown>): Promise<{ err: APIError; ms: number }> {
  const t0 = performance.now();
  const err = await send().then(
    () => assert.fail('a body over the limit was accepted'),
    (e: unknown) => e,
  );
  const ms = performance.now() - t0;
  assert.ok(err instanceof APIError && err.status !== undefined, `the client got no HTTP answer: ${String(err)}`);
  return { err, ms };
}

function assertTooLarge(err: APIError): void {
  assert.equal(err.status, 413);
  assert.deepEqual(Object.keys(err.error as object).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(err.type, 'invalid_request_error');
  assert.equal(err.code, 'FST_ERR_CTP_BODY_TOO_LARGE');
  assert.equal(err.param, null);
  assert.match(err.message, new RegExp(`^413 the request body is too large: the limit is ${LIMIT} bytes`));
}

/** A body of `bytes` bytes streamed in 64 KiB chunks (sent chunked: no Content-Length). */
async function* streamed(bytes: number): AsyncGenerator<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(0x78);
  for (let sent = 0; sent < bytes; sent += chunk.length) yield chunk;
}

const chat = (content: string) =>
  client.chat.completions.create({ model: 'turnstream-tiny', messages: [{ role: 'user', content }], max_tokens: 4 });

test('40 MB, 200 MB and a streamed 1 GiB: the official client reads the 413, and the gateway keeps none of it', async (t) => {
  // Warm up the paths (a chat, a small refusal) before the idle figure.
  await chat('hello');
  assertTooLarge((await refused(() => chat('x'.repeat(5 * MB)))).err);
  let last = Number.NaN;
  await waitFor(
    'the idle RSS to settle after the warm-up',
    () => {
      const now = rss();
      const steady = Math.abs(now - last) < MB;
      last = now;
      return steady;
    },
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  const idle = rss();
  let peak = idle;
  let hwm = true;
  try {
    writeFileSync(`/proc/${child.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  } catch {
    hwm = false; // then the samples alone
  }
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 10);
  try {
    for (const mb of [40, 200]) {
      const { err, ms } = await refused(() => chat('x'.repeat(mb * MB)));
      assertTooLarge(err);
      t.diagnostic(`${mb} MB body: 413 after ${Math.round(ms)} ms (serialising the body in the client included)`);
    }
    const { err, ms } = await refused(() => client.post('/chat/completions', { body: streamed(1024 * MB) }));
    assertTooLarge(err);
    t.diagnostic(`1 GiB streamed body: 413 after ${Math.round(ms)} ms`);
  } finally {
    clearInterval(sampler);
  }
  if (hwm) peak = Math.max(peak, rss('VmHWM'));
  t.diagnostic(
    `gateway RSS: idle ${(idle / MB).toFixed(1)} MB, peak ${(peak / MB).toFixed(1)} MB (+${((peak - idle) / MB).toFixed(1)} MB)`,
  );
  assert.ok(peak - idle <= 50 * MB, `gateway RSS grew by ${((peak - idle) / MB).toFixed(1)} MB (idle ${(idle / MB).toFixed(1)} MB)`);

  // The connections stayed usable: the same client goes on chatting.
  const ok = await chat('still there?');
  assert.equal(ok.object, 'chat.completion');
});

/** Raw HTTP/1.1 client: writes headers and `bodyBytes` in 1 MiB chunks (`pause` ms between), collecting what comes back. */
async function rawPost(
  base: string,
  bodyBytes: number,
  opts: { connection?: string; readFirst?: boolean; pauseMs?: number } = {},
): Promise<{ written: number; response: string; error?: string; ended: boolean }> {
  const u = new URL(base);
  const socket: Socket = connect(Number(u.port), u.hostname);
  await once(socket, 'connect');
  const result = { written: 0, response: '', error: undefined as string | undefined, ended: false };
  let isClosed = false;
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      isClosed = true;
      resolve();
    }),
  );
  socket.on('error', (err: NodeJS.ErrnoException) => (result.error = err.code ?? err.message));
  socket.on('end', () => (result.ended = true));
  const read = (): void => {
    socket.on('data', (d: Buffer) => (result.response += d.toString()));
  };
  if (opts.readFirst) read();
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n` +
      (opts.connection ? `Connection: ${opts.connection}\r\n` : '') +
      '\r\n',
  );
  const chunk = Buffer.alloc(opts.pauseMs ? 1024 : MB, 0x78);
  while (result.written < bodyBytes && !socket.destroyed) {
    const n = Math.min(chunk.length, bodyBytes - result.written);
    result.written += n;
    if (!socket.write(chunk.subarray(0, n))) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
    if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs)); // deliberate: a slow client
  }
  if (!opts.readFirst) read();
  // The close, or at most 5 s: what came back by then is what the test asserts.
  await waitFor('the server to close the connection', () => isClosed, { timeoutMs: 5000, intervalMs: 20 }).catch(() => undefined);
  socket.destroy();
  return result;
}

test('a client that writes its whole 40 MB body before reading gets the 413, then a clean close (no reset)', async () => {
  const r = await rawPost(url, 40 * MB, { connection: 'close' });
  assert.equal(r.error, undefined, 'no EPIPE/ECONNRESET');
  assert.equal(r.written, 40 * MB);
  assert.match(r.response, /^HTTP\/1\.1 413 /);
  assert.match(r.response, /"type":"invalid_request_error"/);
  assert.ok(r.ended, 'the gateway closed with a FIN once the body was in');
});

test('a refused body that goes on past the drain bounds has its connection closed', async () => {
  const home = await tempHome('drain-cap');
  let g: StartedGateway | undefined;
  try {
    g = await startGateway({
      home: home.dir,
      upstream: { baseUrl: 'http://127.0.0.1:9/v1' }, // never reached: every body here is refused
      bodyLimitBytes: 1024,
      bodyDrain: { maxBytes: 2 * MB, timeoutMs: 500 },
    });
    const fast = await rawPost(g.url, 256 * MB, { readFirst: true });
    // (Whether the 413 is read before the close is a race here: past the bounds, the close wins.)
    assert.ok(fast.written < 64 * MB, `closed after ${fast.written} bytes were written`);

    const t0 = performance.now();
    const slow = await rawPost(g.url, 10 * MB, { readFirst: true, pauseMs: 20 });
    const ms = performance.now() - t0;
    assert.ok(slow.written < 10 * MB, `closed after ${slow.written} bytes were written`);
    assert.ok(ms < 3000, `closed after ${Math.round(ms)} ms`);
  } finally {
    await g?.gw.stop();
    await home.cleanup();
  }
});
