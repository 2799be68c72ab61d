/** Kafka client factory: one place that decides client ids, retries and logging. */
import type { KafkaConfig, logCreator } from 'kafkajs';
import { Kafka, logLevel as KafkaLogLevel } from './kafkajs.ts';
import { createLogger, type Logger } from '../core/index.ts';
import { kafkaSecurityConfig, kafkaSettingError, type KafkaSecurity } from './kafka-security.ts';
import type { TurnstreamError } from '../core/index.ts';

export interface KafkaClientOptions {
  /** Bootstrap servers, e.g. ['127.0.0.1:9092']. */
  brokers: string[];
  /** Shown in broker logs and metrics. @default 'turnstream' */
  clientId?: string;
  /** Where kafkajs logs go. @default a pino logger named 'kafka' */
  logger?: Logger;
  /** Connection timeout in ms. @default 3000 */
  connectionTimeoutMs?: number;
  /** Retries of a failed request (kafkajs retrier). @default 8 */
  retries?: number;
  /** TLS and SASL of every connection (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_TLS_CA_FILE). @default plaintext */
  security?: KafkaSecurity;
}

const toPino =
  (logger: Logger): logCreator =>
  () =>
  ({ level, log }) => {
    const { message, ...extra } = log;
    // Our producers bound retries on purpose: a failed send surfaces (to the outbox or an
    // aborted transaction) instead of blocking; ordering and dedupe do not depend on it.
    if (typeof message === 'string' && message.startsWith('Limiting retries for the idempotent producer')) return;
    // kafkajs logs expected reconnects as errors; keep them at warn so real errors stand out.
    if (level === KafkaLogLevel.ERROR || level === KafkaLogLevel.WARN) logger.warn(extra, message);
    else if (level === KafkaLogLevel.INFO) logger.debug(extra, message);
  };

/** The kafkajs configuration of a turnstream client. */
export function kafkaConfig(options: KafkaClientOptions): KafkaConfig {
  return {
    clientId: options.clientId ?? 'turnstream',
    brokers: options.brokers,
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    requestTimeout: 30000,
    retry: { retries: options.retries ?? 8, initialRetryTime: 100, maxRetryTime: 5000 },
    logLevel: KafkaLogLevel.WARN,
    logCreator: toPino(options.logger ?? createLogger('kafka')),
    ...kafkaSecurityConfig(options.security),
  };
}

/** Where each client made here connects, and how: for {@link settingErrorOf}. */
const made = new WeakMap<Kafka, Pick<KafkaClientOptions, 'brokers' | 'security'>>();

export function createKafka(options: KafkaClientOptions): Kafka {
  const kafka = new Kafka(kafkaConfig(options));
  made.set(kafka, { brokers: options.brokers, security: options.security });
  return kafka;
}

/**
 * When `err`, from a client made by {@link createKafka}, is a failure no retry can fix (a refused
 * SASL login, an untrusted certificate): the setting error that names what to fix; else undefined.
 */
export function settingErrorOf(kafka: Kafka, err: unknown): TurnstreamError | undefined {
  const o = made.get(kafka);
  return o && kafkaSettingError(err, o.brokers.join(','), o.security);
}

/** Parses `host:port,host:port`. */
export const parseBrokers = (s: string): string[] =>
  s
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
