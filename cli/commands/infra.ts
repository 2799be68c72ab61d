/**
 * `turnstream infra up|down|status [--json]`: the local Kafka, Schema Registry and
 * ClickHouse. Progress goes to stderr; URLs (or JSON) to stdout.
 */
import type { Command } from 'commander';
import { join } from 'node:path';
import { stackDown, stackPids, stackStatus, stackUp, type StackOptions, type StackProgress, type StackStatus } from '../../infra/index.ts';
import { loadConfig } from '../config.ts';
import { TurnstreamError } from '../../core/index.ts';

interface InfraFlags {
  home?: string;
  host?: string;
  kafkaPort?: number;
  kafkaControllerPort?: number;
  registryPort?: number;
  registryStorage?: 'kafkasql' | 'mem';
  clickhousePort?: number;
  clickhouseTcpPort?: number;
  timeout?: number;
  json?: boolean;
}

const port = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`not a port: ${v}`);
  return n;
};

function withStackFlags(cmd: Command): Command {
  return cmd
    .option('--home <dir>', 'data, logs and pids of the stack (TURNSTREAM_HOME, default ./.turnstream)')
    .option('--host <addr>', 'address the services listen on', '127.0.0.1')
    .option('--kafka-port <port>', 'Kafka client port', port)
    .option('--kafka-controller-port <port>', 'Kafka KRaft controller port', port)
    .option('--registry-port <port>', 'Schema Registry HTTP port', port)
    .option('--registry-storage <kind>', 'kafkasql (schemas kept in Kafka) or mem', (v: string) => {
      if (v !== 'kafkasql' && v !== 'mem') throw new Error('--registry-storage is kafkasql or mem');
      return v;
    })
    .option('--clickhouse-port <port>', 'ClickHouse HTTP port', port)
    .option('--clickhouse-tcp-port <port>', 'ClickHouse native port', port)
    .option('--json', 'print JSON on one line');
}

/** Flags and environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, CLICKHOUSE_URL, JAVA_HOME) to options. */
function stackOptions(flags: InfraFlags, onProgress?: (p: StackProgress) => void): StackOptions {
  const config = loadConfig();
  const javaHome = config.javaHome;
  return {
    home: flags.home ?? config.home,
    host: flags.host,
    kafkaPort: flags.kafkaPort,
    kafkaControllerPort: flags.kafkaControllerPort,
    registryPort: flags.registryPort,
    registryStorage: flags.registryStorage,
    clickhousePort: flags.clickhousePort,
    clickhouseTcpPort: flags.clickhouseTcpPort,
    kafkaBrokers: config.kafkaBrokers,
    schemaRegistryUrl: config.schemaRegistryUrl,
    clickhouseUrl: config.clickhouseUrl,
    javaBinary: javaHome ? join(javaHome, 'bin', 'java') : undefined,
    startTimeoutMs: flags.timeout !== undefined ? flags.timeout * 1000 : undefined,
    onProgress,
  };
}

const progressLine = (p: StackProgress): void => {
  process.stderr.write(`[${(p.elapsedMs / 1000).toFixed(1).padStart(5)} s] ${p.service.padEnd(10)} ${p.message}\n`);
};

function printStatus(status: StackStatus): void {
  const mark = (up: boolean): string => (up ? 'up  ' : 'DOWN');
  process.stdout.write(
    `kafka       ${mark(status.kafka.up)}  ${status.kafka.brokers}\n` +
      `registry    ${mark(status.registry.up)}  ${status.registry.url}\n` +
      `clickhouse  ${mark(status.clickhouse.up)}  ${status.clickhouse.url}${status.clickhouse.version ? `  (ClickHouse ${status.clickhouse.version})` : ''}\n`,
  );
}

/** Our errors (a missing program, a taken port) print as one clear message, not a stack trace. */
const handled =
  <A extends unknown[]>(fn: (...args: A) => Promise<void>) =>
  async (...args: A): Promise<void> => {
    try {
      await fn(...args);
    } catch (err) {
      if (!(err instanceof TurnstreamError)) throw err;
      process.stderr.write(`turnstream infra: ${err.message}\n(${err.code})\n`);
      process.exitCode = 1;
    }
  };

export function register(program: Command): void {
  const infra = program.command('infra').description('start, stop or inspect the local Kafka, Schema Registry and ClickHouse');

  withStackFlags(infra.command('up').description('start the local stack (reuses running services); prints the URLs'))
    .option('--timeout <seconds>', 'how long to wait for each service', (v: string) => Number(v))
    .action(
      handled(async (flags: InfraFlags) => {
        const result = await stackUp(stackOptions(flags, flags.json ? undefined : progressLine));
        if (flags.json) {
          process.stdout.write(
            JSON.stringify({ ...(await stackStatus(stackOptions(flags))), services: result.services, ms: result.ms }) + '\n',
          );
          return;
        }
        process.stderr.write(`stack up in ${(result.ms / 1000).toFixed(1)} s\n`);
        process.stdout.write(
          `KAFKA_BROKERS=${result.brokers}\nSCHEMA_REGISTRY_URL=${result.registryUrl}\nCLICKHOUSE_URL=${result.clickhouseUrl}\n`,
        );
      }),
    );

  withStackFlags(infra.command('down').description('stop the services this home started')).action(
    handled(async (flags: InfraFlags) => {
      const stopped = await stackDown(stackOptions(flags, flags.json ? undefined : progressLine));
      if (flags.json) process.stdout.write(JSON.stringify({ stopped }) + '\n');
      else if (Object.values(stopped).every((pid) => pid === undefined)) process.stderr.write('nothing was running\n');
    }),
  );

  withStackFlags(infra.command('status').description('health of the three services')).action(
    handled(async (flags: InfraFlags) => {
      const options = stackOptions(flags);
      const status = await stackStatus(options);
      if (flags.json) {
        process.stdout.write(JSON.stringify(status) + '\n');
      } else {
        printStatus(status);
        const pids = stackPids(options);
        const managed = Object.entries(pids).filter(([, pid]) => pid !== undefined);
        if (managed.length) process.stdout.write(`pids        ${managed.map(([s, pid]) => `${s}=${pid}`).join(' ')}\n`);
      }
      if (!status.kafka.up || !status.registry.up || !status.clickhouse.up) process.exitCode = 3;
    }),
  );
}
