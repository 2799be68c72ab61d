/**
 * One GET over http or https with a CA of one's own and basic auth: the health checks of the
 * registry and ClickHouse. (Node's `fetch` takes no CA without undici's Agent, which Node 20 does
 * not expose.)
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Secret } from './secret.ts';
import type { TlsOptions } from './tls.ts';

export interface HttpGetOptions {
  /** Whom to trust over https. @default Node's roots */
  tls?: TlsOptions;
  /** Basic auth user. @default none */
  username?: string;
  /** Basic auth password (with `username`). @default none */
  password?: Secret;
  /** Bound on the whole request. @default 3000 */
  timeoutMs?: number;
}

export interface HttpGetResult {
  status: number;
  body: string;
}

export function httpGet(url: string, o: HttpGetOptions = {}): Promise<HttpGetResult> {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  const headers: Record<string, string> = {};
  if (o.username !== undefined) {
    headers.authorization = `Basic ${Buffer.from(`${o.username}:${o.password?.reveal() ?? ''}`).toString('base64')}`;
  }
  return new Promise((resolvePromise, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      target,
      { method: 'GET', headers, ...(https && o.tls?.ca ? { ca: o.tls.ca } : {}), signal: AbortSignal.timeout(o.timeoutMs ?? 3_000) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
