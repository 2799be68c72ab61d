import { createServer } from 'node:net';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';

/** A port a service is about to listen on. */
export interface PortClaim {
  /** What listens there, for the message (`Kafka`, `ClickHouse HTTP`). */
  service: string;
  port: number;
  /** The option or flag that moves it, for the message (`--kafka-port`). */
  flag: string;
}

/** True when nothing listens on host:port (we could bind it). */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const server = createServer();
    server.once('error', () => resolvePromise(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolvePromise(true)));
  });
}

/** A port the OS considers free right now on `host`. */
export function getFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port: 0 }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePromise(port));
    });
  });
}

/** `count` consecutive ports, all free now, from a random base in 20000–59999 (a stack of several Kafka nodes puts node i on base + 2i). */
export async function freePortBlock(count: number, host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const free = await Promise.all(Array.from({ length: count }, (_, i) => isPortFree(host, base + i)));
    if (free.every(Boolean)) return base;
  }
  throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `no ${count} consecutive free ports found on ${host}`);
}

/** `n` distinct free ports, none of them in `avoid`. */
export async function distinctFreePorts(n: number, avoid: readonly number[] = [], host = '127.0.0.1'): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) {
    const p = await getFreePort(host);
    if (!avoid.includes(p)) ports.add(p);
  }
  return [...ports];
}

/** The one message for ports someone else holds (pure, so it is unit-tested). */
export function portsTakenMessage(host: string, taken: readonly PortClaim[]): string {
  const list = taken.map((c) => `${c.service} needs ${host}:${c.port}`).join(', ');
  const flags = taken.map((c) => `${c.flag} <port>`).join(' ');
  const ports = taken.map((c) => c.port).join(' ');
  return (
    `port${taken.length > 1 ? 's' : ''} already in use by another program: ${list}. ` +
    `Stop ${taken.length > 1 ? 'what holds them' : 'what holds it'} (see: ss -ltnp | grep -E ':(${ports.replace(/ /g, '|')})\\b'), ` +
    `or move turnstream's services with ${flags}.`
  );
}

/** Throws one PREREQUISITE error naming every port of `claims` that is taken. */
export async function assertPortsFree(host: string, claims: readonly PortClaim[]): Promise<void> {
  const free = await Promise.all(claims.map((c) => isPortFree(host, c.port)));
  const taken = claims.filter((_, i) => !free[i]);
  if (taken.length > 0) {
    throw new TurnstreamError(ErrorCodes.PREREQUISITE, portsTakenMessage(host, taken));
  }
}
