/**
 * How a client reaches a secured Kafka: TLS (with a CA of its own or Node's roots) and a SASL
 * login (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), as kafkajs takes them; and the failures that
 * retrying cannot fix (a refused login, a certificate not trusted), turned into one line that
 * names the setting to fix.
 */
import type { KafkaConfig, SASLOptions } from 'kafkajs';
import { ErrorCodes, TurnstreamError, untrustedCertificate, type Secret, type TlsOptions } from '../core/index.ts';

export const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/** A SASL login. */
export interface KafkaSasl {
  mechanism: SaslMechanism;
  username: string;
  password: Secret;
}

/**
 * The security of a Kafka connection: Kafka's `security.protocol` is PLAINTEXT with neither,
 * SSL with `tls`, SASL_PLAINTEXT with `sasl`, SASL_SSL with both.
 */
export interface KafkaSecurity {
  /** TLS to every broker. @default undefined (plaintext) */
  tls?: TlsOptions;
  /** A SASL login on every connection. @default undefined (none) */
  sasl?: KafkaSasl;
}

/** Kafka's name of the protocol, for logs and `doctor`. */
export function securityProtocol(s: KafkaSecurity | undefined): 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL' {
  if (s?.sasl) return s.tls ? 'SASL_SSL' : 'SASL_PLAINTEXT';
  return s?.tls ? 'SSL' : 'PLAINTEXT';
}

/** kafkajs' `ssl` and `sasl` of a security setting. */
export function kafkaSecurityConfig(s: KafkaSecurity | undefined): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  const out: Pick<KafkaConfig, 'ssl' | 'sasl'> = {};
  if (s?.tls) out.ssl = s.tls.ca ? { ca: [s.tls.ca] } : true;
  if (s?.sasl) {
    // kafkajs keeps this object for re-authentication; it never logs it.
    out.sasl = { mechanism: s.sasl.mechanism, username: s.sasl.username, password: s.sasl.password.reveal() } as SASLOptions;
  }
  return out;
}

/**
 * When `err` (from kafkajs) is a failure no retry can fix, a non-retriable TS_ERR_INVALID_INPUT
 * that names the setting: a SASL login the broker refused, or a broker certificate this client
 * does not trust. Else undefined (an outage, worth waiting for).
 */
export function kafkaSettingError(err: unknown, brokers: string, s: KafkaSecurity | undefined): TurnstreamError | undefined {
  const where = `Kafka at ${brokers}`;
  for (let e = err as { name?: string; message?: string; cause?: unknown; originalError?: unknown } | undefined, i = 0; e && i < 6; i++) {
    if (e.name === 'KafkaJSSASLAuthenticationError') {
      const who = s?.sasl ? `user "${s.sasl.username}" (${s.sasl.mechanism.toUpperCase()})` : 'this client';
      const setting = s?.sasl?.password.setting ?? 'KAFKA_SASL_PASSWORD';
      return new TurnstreamError(
        ErrorCodes.INVALID_INPUT,
        `${where} refused the SASL login of ${who}: wrong user, password or mechanism; check KAFKA_SASL_USERNAME, ${setting.split('=')[0]} and KAFKA_SASL_MECHANISM`,
        { param: setting.split('=')[0], retriable: false, cause: err },
      );
    }
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return untrustedCertificate(err, where, s?.tls && { ...s.tls, setting: s.tls.setting ?? 'KAFKA_TLS_CA_FILE' });
}
