/**
 * An error answered while the request body is still arriving (413 above all: fastify refuses a
 * body over `bodyLimit` from its Content-Length, before reading a byte of it) must reach the
 * client. fastify marks such a reply `Connection: close`, and Node then destroys the socket as
 * soon as the response is flushed, with the client's unread bytes still in the kernel's receive
 * queue: the kernel answers them with a RST, and a client that is still writing (a 40 MB body on
 * loopback is) gets EPIPE/ECONNRESET and loses the response it had not read yet. The official
 * `openai` client then reports only "fetch failed".
 *
 * So the reply keeps the connection open and the rest of the body is read and discarded (no byte
 * kept, memory bounded by the socket's buffers): a client that reads while it writes (undici's
 * fetch, curl) gets the error at once and stops sending; one that writes everything first gets
 * it when it is done. When the body has ended, a client that asked to close gets a plain FIN
 * (nothing unread, no RST). A body that goes on past `maxBytes`, or past `timeoutMs`, has its
 * socket destroyed.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyReply } from 'fastify';

export interface BodyDrainLimits {
  /** Bytes discarded before the socket is destroyed. @default 4 GiB */
  maxBytes?: number;
  /** Time spent discarding before the socket is destroyed, ms. @default 120000 */
  timeoutMs?: number;
}

/** Whether the request's body has not been fully received yet (an early reply must drain it). */
export function bodyStillArriving(req: IncomingMessage): boolean {
  return !req.complete && !req.destroyed && !req.socket.destroyed;
}

/**
 * Before an early reply is sent: keep the connection open for it, and discard the rest of the
 * body, within `limits`. Call it only when `bodyStillArriving(req)`.
 */
export function drainRejectedBody(
  req: IncomingMessage,
  reply: FastifyReply,
  limits: BodyDrainLimits = {},
  onCapped?: (why: string, discarded: number) => void,
): void {
  const maxBytes = limits.maxBytes ?? 4 * 1024 ** 3;
  const timeoutMs = limits.timeoutMs ?? 120_000;
  const socket = req.socket;
  // The client's own choice, before this reply overrides it (HTTP/1.0 closes unless asked not to).
  const clientCloses =
    req.httpVersionMajor === 1 && req.httpVersionMinor === 0
      ? !/\bkeep-alive\b/i.test(req.headers.connection ?? '')
      : /\bclose\b/i.test(req.headers.connection ?? '');
  // Replaces fastify's `close`: Node would destroy the socket right after the response (the RST
  // this module avoids). The client may still close it once it has read the reply.
  void reply.header('connection', 'keep-alive');

  let discarded = 0;
  const cap = (why: string): void => {
    done();
    onCapped?.(why, discarded);
    socket.destroy();
  };
  const onData = (chunk: Buffer): void => {
    discarded += chunk.length;
    if (discarded > maxBytes) cap(`more than ${maxBytes} bytes`);
  };
  const onEnd = (): void => {
    done();
    if (clientCloses) socket.end();
  };
  const timer = setTimeout(() => cap(`still sending after ${timeoutMs} ms`), timeoutMs);
  timer.unref();
  const done = (): void => {
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('close', done);
    socket.off('close', done);
    // Whatever is still in flight after this point is Node's to dump (resumed, unread).
    req.resume();
  };
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('close', done);
  // Once the response is finished Node no longer closes `req` when the socket goes.
  socket.once('close', done);
  req.resume();
}
