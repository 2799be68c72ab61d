/**
 * A local HTTP server for download tests: serves byte buffers with Range support, can redirect,
 * add headers (the hub's x-linked-etag), fail with a status, or cut a response short; records
 * every request.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How one path answers. */
export interface Route {
  /** The body. */
  body?: Uint8Array;
  /** Answer with this status and no body. */
  status?: number;
  /** Redirect (302) here. */
  redirect?: string;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** Send only this many body bytes of the first N responses (N = `truncateTimes`, default 1), then drop the connection. */
  truncateAt?: number;
  truncateTimes?: number;
  /**
   * Drop the connection only once this resolves (after the truncated bytes are written). A fetch
   * body that errors discards the chunks it has queued but not yet handed out, so a test that
   * needs the client to have taken exactly `truncateAt` bytes waits for its progress here.
   */
  cutWhen?: () => Promise<void>;
  /** Ignore Range requests (always 200 with the whole body). */
  noRanges?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export interface FileServer {
  url: string;
  routes: Map<string, Route>;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startFileServer(): Promise<FileServer> {
  const routes = new Map<string, Route>();
  const requests: RecordedRequest[] = [];
  const truncations = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push({ method: req.method ?? 'GET', path, headers: req.headers });
    const route = routes.get(path);
    if (!route) return res.writeHead(404).end();
    if (route.status) return res.writeHead(route.status, route.headers).end();
    if (route.redirect) return res.writeHead(302, { location: route.redirect, ...route.headers }).end();
    const body = Buffer.from(route.body ?? new Uint8Array());
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    let start = 0;
    if (range && !route.noRanges) {
      start = Number(range[1]);
      if (start >= body.length) return res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
      res.writeHead(206, {
        'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
        'content-length': body.length - start,
        ...route.headers,
      });
    } else {
      res.writeHead(200, { 'content-length': body.length, ...route.headers });
    }
    const cut = truncations.get(path) ?? 0;
    if (route.truncateAt !== undefined && cut < (route.truncateTimes ?? 1)) {
      truncations.set(path, cut + 1);
      res.write(body.subarray(start, start + route.truncateAt), () => {
        void (route.cutWhen?.() ?? Promise.resolve()).then(() => res.socket?.destroy());
      });
      return;
    }
    res.end(body.subarray(start));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    routes,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
