/**
 * The checks `up` makes before it starts anything, so that every missing program and every taken
 * port comes in one message rather than one per attempt. A missing ClickHouse is installed with
 * apt first where that is allowed.
 */
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { canUseApt, installClickhouseWithApt, shouldInstallClickhouse } from './clickhouse-install.ts';
import { kafkaNodePorts, type ResolvedStackOptions } from './options.ts';
import { assertPortsFree, type PortClaim } from './ports.ts';
import { checkPrerequisites, findClickhouse, type PrerequisiteNeeds } from './prerequisites.ts';
import type { Plan, ServiceName, StackReporter } from './stack-plan.ts';

/**
 * Checks the programs and ports the processes to start need: `missing(s)` lists which of service
 * s's processes (Kafka: by node, from 0) are not running.
 * @throws TurnstreamError TS_ERR_PREREQUISITE naming every missing program, or every taken port
 */
export async function preflight(p: Plan, missing: (s: ServiceName) => number[], progress: StackReporter): Promise<void> {
  const { o } = p;
  const toStart = (s: ServiceName): boolean => missing(s).length > 0;
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
  await assertPortsFree(o.host, portClaims(o, missing));
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
  // A secured stack makes its CA and certificate with openssl the first time.
  if (o.secure && (toStart('kafka') || toStart('registry') || toStart('clickhouse')) && !existsSync(p.secure.cert)) needs.openssl = true;
  return needs;
}

export function portClaims(o: ResolvedStackOptions, missing: (s: ServiceName) => number[]): PortClaim[] {
  const claims: PortClaim[] = [];
  const nodes = kafkaNodePorts(o);
  for (const i of missing('kafka')) {
    const node = nodes.length > 1 ? ` node ${nodes[i].nodeId}` : '';
    claims.push(
      { service: `Kafka${node}`, port: nodes[i].port, flag: '--kafka-port' },
      { service: `Kafka controller${node}`, port: nodes[i].controllerPort, flag: '--kafka-controller-port' },
    );
  }
  if (missing('registry').length > 0) claims.push({ service: 'Schema Registry', port: o.registryPort, flag: '--registry-port' });
  if (missing('clickhouse').length > 0) {
    claims.push({ service: o.secure ? 'ClickHouse HTTPS' : 'ClickHouse HTTP', port: o.clickhousePort, flag: '--clickhouse-port' });
    if (!o.secure) claims.push({ service: 'ClickHouse TCP', port: o.clickhouseTcpPort, flag: '--clickhouse-tcp-port' });
  }
  return claims;
}
