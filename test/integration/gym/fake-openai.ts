/**
 * A fake OpenAI chat endpoint that answers each call of a session from a script (tool calls, code
 * blocks, plain answers, garbage, errors, delays), as the gateway would: `X-Turn-Id`,
 * `X-Policy-Version`, response id `chatcmpl-<turnId>`. It records every request it got.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer. */
export type Scripted =
  | { content?: string | null; toolCalls?: Array<{ name: string; arguments: string; id?: string }>; finish?: string; noHeaders?: boolean }
  | { status: number; body: string }
  | { delayMs: number; then?: Scripted };

export interface Recorded {
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface FakeOpenAI {
  url: string;
  /** The script of a session (by X-Session-Id); a session past its script gets "Done." */
  script(sessionId: string, replies: Scripted[]): void;
  /** Requests of a session, in order. */
  requests(sessionId: string): Recorded[];
  close(): Promise<void>;
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const scripts = new Map<string, Scripted[]>();
  const seen = new Map<string, Recorded[]>();
  let turns = 0;
  const server: Server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const session = String(req.headers['x-session-id'] ?? '');
    const body = JSON.parse(text || '{}') as Record<string, unknown>;
    if (!seen.has(session)) seen.set(session, []);
    seen.get(session)!.push({ headers: req.headers, body });
    let step: Scripted = scripts.get(session)?.shift() ?? { content: 'Done.' };
    while ('delayMs' in step) {
      const { delayMs, then } = step;
      const closed = await new Promise<boolean>((ok) => {
        const t = setTimeout(() => ok(false), delayMs);
        res.once('close', () => {
          clearTimeout(t);
          ok(true);
        });
      });
      if (closed) return;
      step = then ?? { content: 'Done.' };
    }
    if ('status' in step) {
      res.writeHead(step.status, { 'content-type': 'application/json' });
      res.end(step.body);
      return;
    }
    const turnId = `turn-${++turns}`;
    const toolCalls = (step.toolCalls ?? []).map((t, i) => ({
      id: t.id ?? `call_${turns}_${i}`,
      type: 'function',
      function: { name: t.name, arguments: t.arguments },
    }));
    const message = {
      role: 'assistant',
      content: step.content === undefined ? null : step.content,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    };
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (!step.noHeaders) Object.assign(headers, { 'x-turn-id': turnId, 'x-policy-version': String(turns % 3) });
    res.writeHead(200, headers);
    res.end(
      JSON.stringify({
        id: `chatcmpl-${turnId}`,
        object: 'chat.completion',
        created: 1,
        model: body.model,
        choices: [{ index: 0, message, finish_reason: step.finish ?? (toolCalls.length ? 'tool_calls' : 'stop') }],
      }),
    );
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    script: (s, replies) => scripts.set(s, [...replies]),
    requests: (s) => seen.get(s) ?? [],
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
