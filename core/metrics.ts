/**
 * Prometheus metrics shared by every service (prom-client), one registry per process. prom-client
 * is loaded with the first metric or the first read of the registry, not with core/index.ts, which
 * every command loads (`turnstream doctor` and `infra` use no metric).
 */
import { createRequire } from 'node:module';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type { Counter, LabelValues } from 'prom-client';

let client: typeof import('prom-client') | undefined;
let shared: Registry | undefined;
const promClient = (): typeof import('prom-client') =>
  (client ??= createRequire(import.meta.url)('prom-client') as typeof import('prom-client'));

/** The process's registry, made (with the default metrics) on first use. */
function theRegistry(): Registry {
  if (!shared) {
    const { Registry, collectDefaultMetrics } = promClient();
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}

/** The process's registry: what `/metrics` serves, and where a test reads a metric. */
export const registry: Pick<Registry, 'metrics' | 'contentType' | 'getSingleMetric'> = {
  metrics: () => theRegistry().metrics(),
  get contentType() {
    return theRegistry().contentType;
  },
  getSingleMetric: (name) => theRegistry().getSingleMetric(name),
};

const counters = new Map<string, Counter<string>>();
const gauges = new Map<string, Gauge<string>>();
const histograms = new Map<string, Histogram<string>>();

/** The metric registered as `name`, created on first use (prom-client refuses duplicate names; services share these). */
function sharedMetric<M>(cache: Map<string, M>, name: string, create: () => M): M {
  let m = cache.get(name);
  if (!m) {
    m = create();
    cache.set(name, m);
  }
  return m;
}

export function counter(name: string, help: string, labelNames: string[] = []): Counter<string> {
  return sharedMetric(counters, name, () => new (promClient().Counter)({ name, help, labelNames, registers: [theRegistry()] }));
}

export function gauge(name: string, help: string, labelNames: string[] = []): Gauge<string> {
  return sharedMetric(gauges, name, () => new (promClient().Gauge)({ name, help, labelNames, registers: [theRegistry()] }));
}

export function histogram(name: string, help: string, labelNames: string[] = [], buckets?: number[]): Histogram<string> {
  return sharedMetric(
    histograms,
    name,
    () => new (promClient().Histogram)({ name, help, labelNames, registers: [theRegistry()], ...(buckets ? { buckets } : {}) }),
  );
}
