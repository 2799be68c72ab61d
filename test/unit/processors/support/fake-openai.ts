/** A scripted OpenAI-compatible server on 127.0.0.1 for judge and teacher tests. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  status?: number;
  /** JSON body, or a raw string sent as is. */
  body?: unknown;
  /** Wait this long before answering (a timeout test). */
  delayMs?: number;
}

/** One message of a request, as the fakes read it. */
export interface FakeMessage {
  role: string;
  content: string | null;
  [field: string]: unknown;
}

/** A request's JSON body (chat completions, completions): the fields the fakes script on, any other as sent. */
export interface FakeBody {
  model?: string;
  messages: FakeMessage[];
  [field: string]: unknown;
}

export interface FakeRequest {
  url: string;
  headers: IncomingHttpHeaders;
  /** `{ messages: [] }` for a request without a body (a GET). */
  body: FakeBody;
}

export interface FakeServer {
  baseUrl: string;
  origin: string;
  requests: FakeRequest[];
  close(): Promise<void>;
}

/** A chat completion whose message content is `content`. */
export const chat = (content: string | null): FakeReply => ({
  body: { id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] },
});

export async function startFakeOpenAI(handler: (req: FakeRequest, n: number) => FakeReply | Promise<FakeReply>): Promise<FakeServer> {
  const requests: FakeRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const r: FakeRequest = { url: req.url ?? '', headers: req.headers, body: raw ? (JSON.parse(raw) as FakeBody) : { messages: [] } };
      requests.push(r);
      const reply = await handler(r, requests.length - 1);
      if (reply.delayMs) await new Promise((ok) => setTimeout(ok, reply.delayMs)); // deliberate: a slow server, as scripted
      if (res.destroyed) return;
      res.statusCode = reply.status ?? 200;
      res.setHeader('content-type', 'application/json');
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {}));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
