/** Prometheus metrics shared by every service (prom-client), one registry per process. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type { Counter, LabelValues } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const counters = new Map<string, Counter<string>>();
const gauges = new Map<string, Gauge<string>>();
const histograms = new Map<string, Histogram<string>>();

/** Gets or creates a counter (prom-client refuses duplicate names; services share this). */
export function counter(name: string, help: string, labelNames: string[] = []): Counter<string> {
  let c = counters.get(name);
  if (!c) {
    c = new Counter({ name, help, labelNames, registers: [registry] });
    counters.set(name, c);
  }
  return c;
}

export function gauge(name: string, help: string, labelNames: string[] = []): Gauge<string> {
  let g = gauges.get(name);
  if (!g) {
    g = new Gauge({ name, help, labelNames, registers: [registry] });
    gauges.set(name, g);
  }
  return g;
}

export function histogram(name: string, help: string, labelNames: string[] = [], buckets?: number[]): Histogram<string> {
  let h = histograms.get(name);
  if (!h) {
    h = new Histogram({ name, help, labelNames, registers: [registry], ...(buckets ? { buckets } : {}) });
    histograms.set(name, h);
  }
  return h;
}
