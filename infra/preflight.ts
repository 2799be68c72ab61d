/**
 * The checks `up` makes before it starts anything, so that every missing program and every taken
 * port comes in one message rather than one per attempt. A missing ClickHouse is installed with
 * apt first where that is allowed.
 */
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { canUseApt, installClickhouseWithApt, shouldInstallClickhouse } from './clickhouse-install.ts';
import type { ResolvedStackOptions } from './options.ts';
import { assertPortsFree, type PortClaim } from './ports.ts';
import { checkPrerequisites, findClickhouse, type PrerequisiteNeeds } from './prerequisites.ts';
import type { Plan, ServiceName, StackReporter } from './stack-plan.ts';

/**
 * Checks the programs and ports the services in `toStart` need.
 * @throws TurnstreamError TS_ERR_PREREQUISITE naming every missing program, or every taken port
 */
export async function preflight(p: Plan, toStart: (s: ServiceName) => boolean, progress: StackReporter): Promise<void> {
  const { o } = p;
  const needs = prerequisiteNeeds(p, toStart);
  const install = { needed: toStart('clickhouse'), binaryGiven: o.clickhouseBinary !== undefined, enabled: o.installClickhouse };
  if (
    shouldInstallClickhouse({
      ...install,
      found: install.needed && findClickhouse(o.clickhouseBinary) !== undefined,
      canApt: install.needed && canUseApt(),
    })
  ) {
    progress(
      'clickhouse',
      "clickhouse-server not found: installing Debian's clickhouse-server and clickhouse-client with apt-get (running as root)",
    );
    await installClickhouseWithApt();
  }
  checkPrerequisites(needs);
  await assertPortsFree(o.host, portClaims(o, toStart));
}

/** Java for Kafka and the registry, Maven where their jars are not fetched yet, and ClickHouse. */
function prerequisiteNeeds(p: Plan, toStart: (s: ServiceName) => boolean): PrerequisiteNeeds {
  const { o } = p;
  const needs: PrerequisiteNeeds = {};
  if (toStart('kafka') || toStart('registry')) needs.java = o.javaBinary;
  if ((toStart('kafka') && !existsSync(join(p.kafka.libs, '.pom-sha256'))) || (toStart('registry') && !existsSync(p.registry.runnerJar))) {
    needs.mvn = o.mavenBinary;
  }
  if (toStart('clickhouse')) needs.clickhouse = o.clickhouseBinary ?? true;
  return needs;
}

function portClaims(o: ResolvedStackOptions, toStart: (s: ServiceName) => boolean): PortClaim[] {
  const claims: PortClaim[] = [];
  if (toStart('kafka')) {
    claims.push(
      { service: 'Kafka', port: o.kafkaPort, flag: '--kafka-port' },
      { service: 'Kafka controller', port: o.kafkaControllerPort, flag: '--kafka-controller-port' },
    );
  }
  if (toStart('registry')) claims.push({ service: 'Schema Registry', port: o.registryPort, flag: '--registry-port' });
  if (toStart('clickhouse')) {
    claims.push(
      { service: 'ClickHouse HTTP', port: o.clickhousePort, flag: '--clickhouse-port' },
      { service: 'ClickHouse TCP', port: o.clickhouseTcpPort, flag: '--clickhouse-tcp-port' },
    );
  }
  return claims;
}
