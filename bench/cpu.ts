/**
 * Where a bench's CPU time goes: seconds spent by this process, by child processes it names and by
 * the local stack's services (Kafka, the registry, ClickHouse, found by their pid files), over one
 * phase of the bench. With `wall` and the machine's cores it gives how busy the whole machine was,
 * which tells a bound set by the client's code from one set by the machine. Services that run
 * elsewhere (configured endpoints) are not counted.
 */
import { availableParallelism } from 'node:os';
import pidusage from 'pidusage';
import type { BenchConfig } from './options.ts';
import { stackPids } from '../infra/index.ts';

/** CPU seconds by process: `bench` (this one), each named child, `kafka`, `registry`, `clickhouse`. */
export type CpuSeconds = Record<string, number>;

export interface CpuPhase {
  seconds: CpuSeconds;
  /** Sum of `seconds`. */
  total: number;
  wall: number;
  /** total / (wall × cores): 1 = every core of the machine busy throughout. */
  machine_busy: number;
}

export const cores = (): number => availableParallelism();

export class CpuMeter {
  private readonly services: Record<string, number>;

  constructor(config: Pick<BenchConfig, 'home'>) {
    this.services = Object.fromEntries(
      Object.entries(stackPids({ home: config.home })).filter((e): e is [string, number] => e[1] !== undefined),
    );
  }

  /** Cumulative CPU seconds so far of this process, the services and `children` (name → pid). */
  async read(children: Record<string, number> = {}): Promise<CpuSeconds> {
    const own = process.cpuUsage();
    const out: CpuSeconds = { bench: (own.user + own.system) / 1e6 };
    const named = { ...children, ...this.services };
    const pids = Object.values(named);
    if (pids.length === 0) return out;
    const stats = await pidusage(pids);
    pidusage.clear();
    for (const [name, pid] of Object.entries(named)) out[name] = (stats[pid]?.ctime ?? 0) / 1000;
    return out;
  }

  /** Runs `work`: its value, its wall seconds and the CPU spent meanwhile (`children` names child pids to count too). */
  async measure<T>(
    work: () => Promise<T>,
    children: () => Record<string, number> = () => ({}),
  ): Promise<{ value: T; seconds: number; cpu: CpuPhase }> {
    const before = await this.read(children());
    const t0 = performance.now();
    const value = await work();
    const seconds = (performance.now() - t0) / 1000;
    return { value, seconds, cpu: CpuMeter.phase(before, await this.read(children()), seconds) };
  }

  /** What was spent between two readings, over `wall` seconds. */
  static phase(before: CpuSeconds, after: CpuSeconds, wall: number): CpuPhase {
    // To 0.1 ms: a toy-sized phase may last 10 ms, and this process's own CPU (µs precision) must not round to 0.
    const seconds = Object.fromEntries(Object.keys(after).map((k) => [k, round4(after[k]! - (before[k] ?? 0))]));
    const total = round4(Object.values(seconds).reduce((a, b) => a + b, 0));
    return { seconds, total, wall: round4(wall), machine_busy: round4(total / (wall * cores())) };
  }

  /** The phase whose total is the median of `phases` (one per round). */
  static median(phases: CpuPhase[]): CpuPhase {
    const sorted = [...phases].sort((a, b) => a.total - b.total);
    return sorted[(sorted.length - 1) >> 1]!;
  }
}

const round4 = (x: number): number => Math.round(x * 1e4) / 1e4;
