/**
 * TCP connections of a process to the brokers, counted from /proc (Linux): its sockets
 * (/proc/<pid>/fd) matched against the established connections whose remote port is a broker's
 * (/proc/net/tcp, tcp6). What a client costs a broker in connections, as `bench clients` reports it.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Established connections of `pid` to any of `ports`; null where /proc cannot tell (not Linux). */
export function brokerConnections(pid: number, ports: ReadonlySet<number>): number | null {
  let inodes: Set<string>;
  try {
    inodes = new Set(
      readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
        try {
          const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
          return m ? [m[1]] : [];
        } catch {
          return []; // closed meanwhile
        }
      }),
    );
  } catch {
    return null;
  }
  let n = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (f.length < 10 || f[3] !== '01') continue;
      const port = Number.parseInt(f[2].split(':')[1] ?? '', 16);
      if (ports.has(port) && inodes.has(f[9])) n++;
    }
  }
  return n;
}

/** The ports of a `host:port,host:port` broker list. */
export function brokerPorts(brokers: string): Set<number> {
  return new Set(brokers.split(',').map((b) => Number(b.trim().split(':').pop())));
}

/** Samples `count` every `everyMs` until stopped; `stop` returns the most seen (null where it cannot tell). */
export function peakOf(count: () => number | null, everyMs = 100): { stop(): number | null } {
  let peak: number | null = count();
  const timer = setInterval(() => {
    const n = count();
    if (n !== null) peak = Math.max(peak ?? 0, n);
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}
