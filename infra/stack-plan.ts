/**
 * What a home's stack is before anything runs: its resolved options, endpoints and file paths,
 * the markers that tie a pid to it, which given endpoints are in fact its own services, and how
 * clients reach each service (a secured stack's own credentials, read from its home).
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
  type StackSecurity,
} from './options.ts';
import { registryPaths } from './registry.ts';
import { localSecurity, securePaths } from './secure.ts';

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
  secure: ReturnType<typeof securePaths>;
}

export function plan(options: StackOptions): Plan {
  const o = resolveStackOptions(options);
  return {
    o,
    endpoints: endpointsOf(o),
    kafka: kafkaPaths(o),
    registry: registryPaths(o),
    clickhouse: clickhousePaths(o),
    secure: securePaths(o),
  };
}

/** One process of a service: Kafka has one per node, the others one. */
export interface Instance {
  /** `kafka node 2`, `registry`. */
  label: string;
  pidFile: string;
  /** A string in its command line that ties a pid to this home (pids are reused by the OS). */
  marker: string;
}

export function instancesOf(p: Plan, s: ServiceName): Instance[] {
  if (s === 'kafka') {
    return p.kafka.nodes.map((n) => ({
      label: p.kafka.nodes.length > 1 ? `kafka node ${n.nodeId}` : 'kafka',
      pidFile: n.pidFile,
      marker: n.serverProperties,
    }));
  }
  if (s === 'registry') return [{ label: 'registry', pidFile: p.registry.pidFile, marker: p.registry.dataDir }];
  return [{ label: 'clickhouse', pidFile: p.clickhouse.pidFile, marker: p.clickhouse.configFile }];
}

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
  const kafkaSetUp = existsSync(p.kafka.nodes[0].serverProperties);
  return {
    kafka: !!o.kafkaBrokers && sameHost(o.kafkaBrokers) === sameHost(mine.brokers) && kafkaSetUp,
    // The registry keeps its schemas in this home's Kafka: a home with that Kafka runs it.
    registry: !!o.schemaRegistryUrl && sameHost(o.schemaRegistryUrl) === sameHost(mine.registryUrl) && kafkaSetUp,
    clickhouse: !!o.clickhouseUrl && sameHost(o.clickhouseUrl) === sameHost(mine.clickhouseUrl) && existsSync(p.clickhouse.configFile),
  };
}

/**
 * How clients reach each service: a secured stack's own (its CA and passwords, once written)
 * for the services it runs, the given security for given endpoints.
 */
export function securityOf(p: Plan, local: Record<ServiceName, boolean>): StackSecurity {
  const given = p.o.security;
  const own = p.o.secure && existsSync(p.secure.caCert) ? localSecurity(p.secure) : undefined;
  return {
    kafka: local.kafka && own ? own.kafka : given.kafka,
    registry: local.registry && own ? own.registry : given.registry,
    clickhouse: local.clickhouse && own ? own.clickhouse : given.clickhouse,
  };
}
