/**
 * What a home's stack is before anything runs: its resolved options, endpoints and file paths,
 * the markers that tie a pid to it, and which given endpoints are in fact its own services.
 */
import { existsSync } from 'node:fs';
import { clickhousePaths } from './clickhouse.ts';
import { kafkaPaths } from './kafka.ts';
import {
  endpointsOf,
  resolveStackOptions,
  type ResolvedStackOptions,
  type StackEndpoints,
  type StackOptions,
  type StackProgress,
} from './options.ts';
import { registryPaths } from './registry.ts';

export type ServiceName = 'kafka' | 'registry' | 'clickhouse';

/** Reports one step of an operation on the stack (its elapsed time is added by the caller). */
export type StackReporter = (service: StackProgress['service'], message: string) => void;

/** A home's resolved options, endpoints and each service's paths. */
export interface Plan {
  o: ResolvedStackOptions;
  endpoints: StackEndpoints;
  kafka: ReturnType<typeof kafkaPaths>;
  registry: ReturnType<typeof registryPaths>;
  clickhouse: ReturnType<typeof clickhousePaths>;
}

export function plan(options: StackOptions): Plan {
  const o = resolveStackOptions(options);
  return { o, endpoints: endpointsOf(o), kafka: kafkaPaths(o), registry: registryPaths(o), clickhouse: clickhousePaths(o) };
}

/** Markers that tie a pid to this home (pids are reused by the OS). */
export const markers = (p: Plan): Record<ServiceName, string> => ({
  kafka: p.kafka.serverProperties,
  registry: p.registry.dataDir,
  clickhouse: p.clickhouse.configFile,
});

/** The variable that names a given endpoint. */
export const VARIABLE: Record<ServiceName, string> = {
  kafka: 'KAFKA_BROKERS',
  registry: 'SCHEMA_REGISTRY_URL',
  clickhouse: 'CLICKHOUSE_URL',
};

const sameHost = (url: string): string => url.replace(/\blocalhost\b/g, '127.0.0.1').replace(/\/+$/, '');

/**
 * Given endpoints that are this home's own services: the address the local stack uses, and a
 * service this home has set up (its config on disk). `infra up` prints the endpoints to export,
 * and with them exported a killed local Kafka would otherwise be taken for someone else's and
 * never started again; these are managed as local instead.
 */
export function ownEndpoints(p: Plan): Record<ServiceName, boolean> {
  const o = p.o;
  const mine = endpointsOf({ ...o, kafkaBrokers: undefined, schemaRegistryUrl: undefined, clickhouseUrl: undefined });
  return {
    kafka: !!o.kafkaBrokers && sameHost(o.kafkaBrokers) === sameHost(mine.brokers) && existsSync(p.kafka.serverProperties),
    // The registry keeps its schemas in this home's Kafka: a home with that Kafka runs it.
    registry: !!o.schemaRegistryUrl && sameHost(o.schemaRegistryUrl) === sameHost(mine.registryUrl) && existsSync(p.kafka.serverProperties),
    clickhouse: !!o.clickhouseUrl && sameHost(o.clickhouseUrl) === sameHost(mine.clickhouseUrl) && existsSync(p.clickhouse.configFile),
  };
}
