/** Prometheus metrics shared by every service (prom-client), one registry per process. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type { Counter, LabelValues } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const counters = new Map<string, Counter<string>>();
const gauges = new Map<string, Gauge<string>>();
const histograms = new Map<string, Histogram<string>>();

/** The metric registered as `name`, created on first use (prom-client refuses duplicate names; services share these). */
function shared<M>(cache: Map<string, M>, name: string, create: () => M): M {
  let m = cache.get(name);
  if (!m) {
    m = create();
    cache.set(name, m);
  }
  return m;
}

export function counter(name: string, help: string, labelNames: string[] = []): Counter<string> {
  return shared(counters, name, () => new Counter({ name, help, labelNames, registers: [registry] }));
}

export function gauge(name: string, help: string, labelNames: string[] = []): Gauge<string> {
  return shared(gauges, name, () => new Gauge({ name, help, labelNames, registers: [registry] }));
}

export function histogram(name: string, help: string, labelNames: string[] = [], buckets?: number[]): Histogram<string> {
  return shared(histograms, name, () => new Histogram({ name, help, labelNames, registers: [registry], ...(buckets ? { buckets } : {}) }));
}
