/**
 * `turnstream infra up|down|status [--secure] [--brokers n] [--json]`: the local Kafka, Schema
 * Registry and ClickHouse; `--secure` and `--brokers n` are stacks of their own, beside the plain
 * one. Progress goes to stderr; the settings to export (or JSON) to stdout.
 */
import type { Command } from 'commander';
import { join } from 'node:path';
import {
  clientSettings,
  stackDown,
  stackPids,
  stackStatus,
  stackUp,
  MAX_BROKER_COUNT,
  type StackOptions,
  type StackProgress,
  type StackStatus,
} from '../../infra/index.ts';
import { loadConfig } from '../config.ts';
import { stackSecurity } from '../connection-settings.ts';
import { invalidInput, TurnstreamError } from '../../core/index.ts';

interface InfraFlags {
  home?: string;
  host?: string;
  secure?: boolean;
  brokers?: number;
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

const brokerCount = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_BROKER_COUNT)
    throw invalidInput(`--brokers: expected 1 to ${MAX_BROKER_COUNT}, not ${v}`, '--brokers');
  return n;
};

function withStackFlags(cmd: Command): Command {
  return cmd
    .option('--home <dir>', 'data, logs and pids of the stack (TURNSTREAM_HOME, default ./.turnstream)')
    .option('--host <addr>', 'address the services listen on', '127.0.0.1')
    .option(
      '--secure',
      'the secured stack (in <home>/stacks/secure, ports +100): Kafka SASL_SSL with SCRAM users, the registry over https with basic auth, ClickHouse over https with a password, certificates from a CA of its own',
    )
    .option(
      '--brokers <n>',
      `Kafka nodes, each broker and controller (in <home>/stacks/brokers-<n>, ports +200), 1 to ${MAX_BROKER_COUNT}`,
      brokerCount,
    )
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
    secure: flags.secure,
    brokerCount: flags.brokers,
    security: stackSecurity(config),
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
            JSON.stringify({
              ...(await stackStatus(stackOptions(flags))),
              services: result.services,
              settings: clientSettings(stackOptions(flags), result),
              ms: result.ms,
            }) + '\n',
          );
          return;
        }
        process.stderr.write(`stack up in ${(result.ms / 1000).toFixed(1)} s\n`);
        // A secured stack's passwords as the files that hold them, never their values.
        const settings = clientSettings(stackOptions(flags), result);
        process.stdout.write(
          Object.entries(settings)
            .map(([k, v]) => `${k}=${v}\n`)
            .join(''),
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
