/**
 * The settings of secured connections: Kafka's TLS and SASL login, the registry's basic auth and
 * CA, ClickHouse's password and CA. Read here once (with the rest of cli/config.ts) and handed to
 * the client factories by every service; a password comes from its variable or from the file its
 * `_FILE` variable names, and is a `Secret` from then on (it prints as `[secret from …]`).
 */
import type { Secret, TlsOptions } from '../core/index.ts';
import type { StackSecurity } from '../infra/index.ts';
import type { ConnectionSecurity } from '../streams/index.ts';
// Read with the configuration, which every command loads: streams/index.ts would load kafkajs and the streams runtime.
import { SASL_MECHANISMS, securityProtocol, type KafkaSecurity } from '../streams/kafka-security.ts';

/** What of cli/config.ts's SettingsReader these settings use (named here, so neither file imports the other's types in a circle). */
export interface SecuritySettingsReader {
  text(name: string): string | undefined;
  has(name: string): boolean;
  oneOf<T extends string>(name: string, fallback: T, choices: readonly T[]): T;
  secret(name: string): Secret | undefined;
  caFile(name: string): TlsOptions | undefined;
  fail(name: string, message: string): void;
}

export const KAFKA_SECURITY_PROTOCOLS = ['plaintext', 'ssl', 'sasl_plaintext', 'sasl_ssl'] as const;
export type KafkaSecurityProtocol = (typeof KAFKA_SECURITY_PROTOCOLS)[number];

export interface ConnectionSettings {
  security: ConnectionSecurity;
  clickhouse: { password: Secret | undefined; tls: TlsOptions | undefined };
}

/**
 * `KAFKA_SECURITY_PROTOCOL` (its default: `sasl_ssl` with a SASL user, `ssl` with a CA file, else
 * `plaintext`), `KAFKA_SASL_MECHANISM` / `_USERNAME` / `_PASSWORD[_FILE]`, `KAFKA_TLS_CA_FILE`,
 * `SCHEMA_REGISTRY_USERNAME` / `_PASSWORD[_FILE]` / `_CA_FILE`, `CLICKHOUSE_PASSWORD[_FILE]`,
 * `CLICKHOUSE_CA_FILE`. A login without its password, or a half that the protocol does not use,
 * is a problem recorded on `r`.
 */
export function readConnectionSecurity(r: SecuritySettingsReader): ConnectionSettings {
  const username = r.text('KAFKA_SASL_USERNAME');
  const ca = r.caFile('KAFKA_TLS_CA_FILE');
  const protocol = r.oneOf<KafkaSecurityProtocol>(
    'KAFKA_SECURITY_PROTOCOL',
    username !== undefined ? 'sasl_ssl' : r.has('KAFKA_TLS_CA_FILE') ? 'ssl' : 'plaintext',
    KAFKA_SECURITY_PROTOCOLS,
  );
  const mechanism = r.oneOf('KAFKA_SASL_MECHANISM', 'scram-sha-512', SASL_MECHANISMS);
  const password = r.secret('KAFKA_SASL_PASSWORD');
  const sasl = protocol.startsWith('sasl_');
  const tls = protocol.endsWith('ssl');
  if (sasl && username === undefined) r.fail('KAFKA_SASL_USERNAME', `required with KAFKA_SECURITY_PROTOCOL=${protocol}`);
  if (sasl && username !== undefined && password === undefined && !r.has('KAFKA_SASL_PASSWORD_FILE')) {
    r.fail('KAFKA_SASL_PASSWORD', `required with KAFKA_SASL_USERNAME (or KAFKA_SASL_PASSWORD_FILE)`);
  }
  if (!sasl && username !== undefined) r.fail('KAFKA_SASL_USERNAME', `set, but KAFKA_SECURITY_PROTOCOL=${protocol} has no SASL login`);
  if (!tls && ca !== undefined) r.fail('KAFKA_TLS_CA_FILE', `set, but KAFKA_SECURITY_PROTOCOL=${protocol} has no TLS`);
  const kafka: KafkaSecurity | undefined =
    sasl || tls
      ? {
          ...(tls ? { tls: ca ?? {} } : {}),
          ...(sasl && username !== undefined && password ? { sasl: { mechanism, username, password } } : {}),
        }
      : undefined;

  const registryUser = r.text('SCHEMA_REGISTRY_USERNAME');
  const registryPassword = r.secret('SCHEMA_REGISTRY_PASSWORD');
  if (registryPassword !== undefined && registryUser === undefined)
    r.fail('SCHEMA_REGISTRY_USERNAME', 'required with SCHEMA_REGISTRY_PASSWORD');
  const registryCa = r.caFile('SCHEMA_REGISTRY_CA_FILE');

  return {
    security: {
      kafka,
      registry:
        registryUser !== undefined || registryCa !== undefined
          ? { ...(registryUser !== undefined ? { username: registryUser, password: registryPassword } : {}), tls: registryCa }
          : undefined,
    },
    clickhouse: { password: r.secret('CLICKHOUSE_PASSWORD'), tls: r.caFile('CLICKHOUSE_CA_FILE') },
  };
}

/** The security of every given endpoint, for `stackUp` / `stackStatus` to health-check them as the services connect. */
export function stackSecurity(config: {
  security: ConnectionSecurity;
  clickhouse: { username: string | undefined; password: Secret | undefined; tls: TlsOptions | undefined };
}): StackSecurity {
  const c = config.clickhouse;
  return { ...config.security, clickhouse: { username: c.username, password: c.password, tls: c.tls } };
}

/** How one service is reached, as `turnstream doctor` shows it: what is set, never a secret's value. */
export interface ConnectionReport {
  /** The endpoint, or `local stack` when none is given. */
  endpoint: string;
  /** `PLAINTEXT`, `SASL_SSL` … for Kafka; `http`/`https` for the others. */
  protocol: string;
  /** The login's user (and mechanism), or undefined for none. */
  user: string | undefined;
  /** `set (KAFKA_SASL_PASSWORD_FILE=/run/secrets/kafka)`, or `not set`. */
  password: string;
  /** The CA file, or Node's default roots. */
  trust: string;
}

/** Every service's connection settings, for `doctor`: a password shows as set (and from where), never as itself. */
export function connectionReport(config: {
  kafkaBrokers: string | undefined;
  schemaRegistryUrl: string | undefined;
  clickhouseUrl: string | undefined;
  security: ConnectionSecurity;
  clickhouse: { username: string | undefined; password: Secret | undefined; tls: TlsOptions | undefined };
}): Record<'kafka' | 'registry' | 'clickhouse', ConnectionReport> {
  const password = (s: Secret | undefined): string => (s ? `set (${s.setting})` : 'not set');
  const trust = (tls: TlsOptions | undefined): string => (tls?.ca ? (tls.setting ?? 'a CA file') : "Node's default roots");
  const scheme = (url: string | undefined): string => (url ? new URL(url).protocol.replace(':', '') : 'http');
  const k = config.security.kafka;
  const r = config.security.registry;
  const c = config.clickhouse;
  return {
    kafka: {
      endpoint: config.kafkaBrokers ?? 'local stack',
      protocol: securityProtocol(k),
      user: k?.sasl ? `${k.sasl.username} (${k.sasl.mechanism.toUpperCase()})` : undefined,
      password: password(k?.sasl?.password),
      trust: k?.tls ? trust(k.tls) : 'no TLS',
    },
    registry: {
      endpoint: config.schemaRegistryUrl ?? 'local stack',
      protocol: scheme(config.schemaRegistryUrl),
      user: r?.username,
      password: password(r?.password),
      trust: trust(r?.tls),
    },
    clickhouse: {
      endpoint: config.clickhouseUrl ?? 'local stack',
      protocol: scheme(config.clickhouseUrl),
      user: c.username,
      password: password(c.password),
      trust: trust(c.tls),
    },
  };
}
