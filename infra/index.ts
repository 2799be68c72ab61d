/** The local stack (Kafka, Schema Registry, ClickHouse): what other folders may use. */
export { stackUp, stackUpFor, stackDown, stackStatus, stackPids, kafkaNodePids, clientSettings } from './stack.ts';
export type { ConfiguredStack, StackStatus, StackUpResult, ServiceReport, ServiceName } from './stack.ts';
export { resolveStackOptions, endpointsOf, MAX_BROKER_COUNT } from './options.ts';
export type { StackOptions, StackEndpoints, StackProgress, RegistryStorage, StackSecurity, ClickhouseSecurity } from './options.ts';
export { distinctFreePorts, freePortBlock, getFreePort, isPortFree } from './ports.ts';
export { KAFKA_VERSION, kafkaHealthy } from './kafka.ts';
export { checkPrerequisites } from './prerequisites.ts';
export { runCommand } from './run-command.ts';
export { makeCa } from './secure.ts';
export { registryHealthy } from './registry.ts';
export { clickhouseVersion } from './clickhouse.ts';
export { Supervisor, type ServiceSpec, type ServiceState, type SupervisorOptions } from './supervisor.ts';
