/**
 * The one way out of a sandbox: an HTTP bridge on a unix socket, forwarding to the gateway and
 * nowhere else. The sandbox has no network; a unix socket is a file, so a socket made in the
 * workspace can be reached from inside, where a small forwarder (bridge-forwarder.ts) listens on
 * the sandbox's own 127.0.0.1 and pipes each connection to it. An agent inside (OpenClaw) talks
 * plain HTTP to 127.0.0.1 and reaches the gateway's `/v1` routes only.
 *
 * On the way, every chat completion gets the rollout's headers (session, turn type, user, the
 * API key, which never enters the sandbox), its `metadata` and the rollout's sampling, as the
 * built-in agent's calls do; calls past `maxCalls` are refused (the task's max_turns). From each
 * answer the bridge keeps the turn id and served version, the request and the reply (streamed
 * replies are put back together from their chunks).
 */
import { chmod, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { RolloutMetadata, SamplingOptions } from './rollout-types.ts';

/** Options of {@link startGatewayBridge}. */
export interface GatewayBridgeOptions {
  /** Where the bridge listens (a path the sandbox sees). */
  socketPath: string;
  /** The gateway's base URL (`http://127.0.0.1:30000`, with or without `/v1`). */
  gateway: string;
  /** Headers added to every forwarded request (X-Session-Id, X-Turn-Type, X-User-Id, Authorization). */
  headers: Readonly<Record<string, string>>;
  /** The body's `metadata` of every chat completion. */
  metadata: RolloutMetadata;
  /** Sampling put into every chat completion (call k's seed is seed + k). @default the client's */
  sampling?: SamplingOptions;
  /** Chat completions allowed; later ones are answered 400 without reaching the gateway (not 429: clients retry that). @default unlimited */
  maxCalls?: number;
  /** Largest request body forwarded. @default 16 MiB */
  maxBodyBytes?: number;
}

/** One chat completion that went through. */
export interface BridgedCall {
  turnId: string;
  /** X-Policy-Version, or −1 where the answer had none (a streamed answer sends its headers first). */
  policyVersion: number;
  /** The messages as sent. */
  messages: unknown[];
  /** The reply (role, content, tool_calls), put together from the stream when streamed. */
  reply: { role: 'assistant'; content: string | null; tool_calls?: unknown[] } | null;
  status: number;
  ms: number;
}

export interface GatewayBridge {
  /** Chat completions the gateway answered (with a turn id), in the order they were sent. */
  readonly calls: readonly BridgedCall[];
  /** Chat completions refused past `maxCalls`. */
  readonly refused: number;
  /** Stops listening, ends open connections and removes the socket. */
  close(): Promise<void>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A streamed chat completion's reply, put back together from its SSE chunks (pure). */
export function replyFromStream(sse: string): BridgedCall['reply'] {
  let content: string | null = null;
  const tools: Array<{ id?: string; type?: string; function: { name: string; arguments: string } }> = [];
  for (const line of sse.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '[DONE]' || data === '') continue;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      continue;
    }
    const delta = isObject(chunk) && Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0].delta : undefined;
    if (!isObject(delta)) continue;
    if (typeof delta.content === 'string') content = (content ?? '') + delta.content;
    for (const tc of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      if (!isObject(tc)) continue;
      const i = typeof tc.index === 'number' ? tc.index : tools.length;
      const f = isObject(tc.function) ? tc.function : {};
      const t = (tools[i] ??= { function: { name: '', arguments: '' } });
      if (typeof tc.id === 'string') t.id = tc.id;
      if (typeof tc.type === 'string') t.type = tc.type;
      if (typeof f.name === 'string') t.function.name += f.name;
      if (typeof f.arguments === 'string') t.function.arguments += f.arguments;
    }
  }
  return { role: 'assistant', content, ...(tools.length ? { tool_calls: tools.filter(Boolean) } : {}) };
}

function replyFromJson(text: string): BridgedCall['reply'] {
  try {
    const body: unknown = JSON.parse(text);
    const m = isObject(body) && Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0].message : undefined;
    if (!isObject(m)) return null;
    return {
      role: 'assistant',
      content: typeof m.content === 'string' ? m.content : null,
      ...(Array.isArray(m.tool_calls) ? { tool_calls: m.tool_calls } : {}),
    };
  } catch {
    return null;
  }
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'te',
  'trailer',
]);

/** An error answer in the OpenAI shape. */
function answer(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', code: null, param: null } }));
}

/** The request's body; null once it is over `maxBody` bytes, answered 413 (before the request is let go). */
async function readBody(req: IncomingMessage, res: ServerResponse, maxBody: number): Promise<Buffer | null> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req) {
    size += (part as Buffer).length;
    if (size > maxBody) {
      answer(res, 413, `the request body is over ${maxBody} bytes`);
      return null;
    }
    parts.push(part as Buffer);
  }
  return Buffer.concat(parts);
}

/** Puts the rollout's metadata and sampling into chat completion number `k` (from 0) of the episode. */
function withRollout(sent: Record<string, unknown>, o: GatewayBridgeOptions, k: number): void {
  const s = o.sampling ?? {};
  sent.metadata = { ...(isObject(sent.metadata) ? sent.metadata : {}), ...o.metadata };
  if (s.temperature !== undefined) sent.temperature = s.temperature;
  if (s.topP !== undefined) sent.top_p = s.topP;
  if (s.seed !== undefined) sent.seed = s.seed + k;
  if (s.maxTokens !== undefined) {
    delete sent.max_completion_tokens;
    sent.max_tokens = s.maxTokens;
  }
}

/** The client's headers less the hop-by-hop ones and its Authorization, then the rollout's, and the body's length. */
function forwardedHeaders(req: IncomingMessage, o: GatewayBridgeOptions, length: number): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && k !== 'authorization') headers[k] = v;
  for (const [k, v] of Object.entries(o.headers)) headers[k.toLowerCase()] = v;
  headers['content-length'] = String(length);
  return headers;
}

/** Fills in `call` from the gateway's answer: its turn id and version, the messages sent and the reply. */
function recordCall(call: BridgedCall, sent: Record<string, unknown>, up: IncomingMessage, text: string, ms: number): void {
  const streamed = String(up.headers['content-type'] ?? '').includes('event-stream');
  const version = Number(up.headers['x-policy-version'] ?? NaN);
  Object.assign(call, {
    turnId: String(up.headers['x-turn-id'] ?? ''),
    policyVersion: Number.isFinite(version) ? version : -1,
    messages: Array.isArray(sent.messages) ? sent.messages : [],
    reply: streamed ? replyFromStream(text) : replyFromJson(text),
    status: up.statusCode ?? 0,
    ms,
  });
}

/** Listens on a unix socket at `socketPath` (in place of any file there) that the sandbox's user can connect to. */
async function listenOn(server: Server, socketPath: string): Promise<void> {
  await rm(socketPath, { force: true });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(socketPath, () => {
      server.off('error', fail);
      ok();
    });
  });
  // The sandbox runs as another user when this process is root: connecting needs write access.
  await chmod(socketPath, 0o666);
}

/** Starts the bridge on its unix socket (made reachable by the sandbox's user). */
export async function startGatewayBridge(o: GatewayBridgeOptions): Promise<GatewayBridge> {
  const target = new URL(o.gateway.replace(/\/+$/, '').replace(/\/v1$/, ''));
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const maxBody = o.maxBodyBytes ?? 16 * 1024 * 1024;
  const bridged: BridgedCall[] = [];
  let refused = 0;
  let chats = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = req.url ?? '/';
    if (!path.startsWith('/v1/')) return answer(res, 404, 'only the gateway’s /v1 routes are reachable from the sandbox');
    let body = await readBody(req, res, maxBody);
    if (!body) return;
    const chat = req.method === 'POST' && /\/chat\/completions\/?$/.test(path.split('?')[0]);
    let sent: Record<string, unknown> | null = null;
    if (chat) {
      if (o.maxCalls !== undefined && chats >= o.maxCalls) {
        refused++;
        return answer(res, 400, `the episode's ${o.maxCalls} model calls (max_turns) are used up`);
      }
      try {
        const parsed: unknown = JSON.parse(body.toString('utf8'));
        if (isObject(parsed)) sent = parsed;
      } catch {
        // not JSON: forwarded as it is, for the gateway to refuse
      }
      if (sent) {
        withRollout(sent, o, chats);
        body = Buffer.from(JSON.stringify(sent));
      }
      chats++;
    }
    const headers = forwardedHeaders(req, o, body.length);
    const started = performance.now();
    // Kept in the order sent (an agent may send the next call before an answer's stream ends).
    const call: BridgedCall | null = chat && sent ? { turnId: '', policyVersion: -1, messages: [], reply: null, status: 0, ms: 0 } : null;
    if (call) bridged.push(call);
    const upstream = send(
      { protocol: target.protocol, hostname: target.hostname, port: target.port, method: req.method, path, headers },
      (up) => {
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(up.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
        res.writeHead(up.statusCode ?? 502, out);
        const kept: Buffer[] = [];
        up.on('data', (d: Buffer) => {
          if (chat) kept.push(d);
          res.write(d);
        });
        up.on('end', () => {
          res.end();
          if (call && sent) recordCall(call, sent, up, Buffer.concat(kept).toString('utf8'), Math.round(performance.now() - started));
        });
        up.on('error', () => res.destroy());
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) answer(res, 502, `the gateway could not be reached: ${err.message}`);
      else res.destroy();
    });
    req.socket.on('close', () => upstream.destroy());
    upstream.end(body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) answer(res, 500, `bridge: ${(err as Error).message}`);
      else res.destroy();
    });
  });
  await listenOn(server, o.socketPath);
  return {
    get calls() {
      return bridged.filter((c) => c.turnId !== '');
    },
    get refused() {
      return refused;
    },
    close: async () => {
      await new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      });
      await rm(o.socketPath, { force: true });
    },
  };
}
