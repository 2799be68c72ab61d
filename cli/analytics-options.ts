/**
 * Where analytics lives, from the configuration: used by `sink`, `report` and `dashboard`. A
 * module of its own, so that `report` and `dashboard` do not load the sink's (the processors').
 */
import type { AnalyticsOptions } from '../warehouse/index.ts';
import { endpointsOf, resolveStackOptions } from '../infra/index.ts';
import type { TurnstreamConfig } from './config.ts';

/** Where analytics lives, from the configuration (used by sink, report and dashboard). */
export function analyticsFromConfig(config: TurnstreamConfig): AnalyticsOptions {
  const endpoints = endpointsOf(resolveStackOptions({ home: config.home, clickhouseUrl: config.clickhouseUrl }));
  return {
    url: endpoints.clickhouseUrl,
    database: config.clickhouse.database,
    username: config.clickhouse.username,
    password: config.clickhouse.password,
    tls: config.clickhouse.tls,
    tablePrefix: config.clickhouse.tablePrefix,
  };
}
