/** Ports for a stack of a test's own: consecutive ones where a stack of several Kafka nodes needs them (node i on base + 2i). */
import { getFreePort, isPortFree } from '../../infra/index.ts';

/** `count` consecutive ports, all free now, starting at a random base in 20000–59999. */
export async function freePortBlock(count: number, host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const free = await Promise.all(Array.from({ length: count }, (_, i) => isPortFree(host, base + i)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

/** `n` distinct free ports, none of them in `avoid`. */
export async function distinctFreePorts(n: number, avoid: readonly number[] = []): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) {
    const p = await getFreePort();
    if (!avoid.includes(p)) ports.add(p);
  }
  return [...ports];
}
