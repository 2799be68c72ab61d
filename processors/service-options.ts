/** What every processor service needs: where Kafka is, the codecs, its group and instance. */
import type { Kafka } from 'kafkajs';
import type { EventCodecs } from '../streams/index.ts';
import type { Logger } from '../core/index.ts';
import { PROCESSOR_DEFAULTS } from './defaults.ts';

export interface ServiceOptions {
  kafka: Kafka;
  /** Codecs of the topic family (prefix / replay tag) the service reads and writes. */
  codecs: EventCodecs;
  /** Consumer group. @default `<prefix>turnstream.<service>` (+ `.<tag>` for a replay) */
  groupId?: string;
  /** Names the instance in logs and its Kafka client id (transactional ids are per partition). @default '0' */
  instanceId?: string;
  /** Records in flight before partitions pause. @default the runtime's (64 per record, 4096 for a batch handler) */
  concurrency?: number;
  /**
   * Consumer group session timeout: how long a dead instance (kill -9, a lost machine) holds its
   * partitions before the group moves them to the others. Slow work never needs a longer one:
   * the runtime heartbeats while it waits. `PROCESSOR_SESSION_TIMEOUT_MS` @default PROCESSOR_DEFAULTS.sessionTimeoutMs (30000)
   */
  sessionTimeoutMs?: number;
  /** @default a pino logger named after the service */
  logger?: Logger;
}

/** The default consumer group of a service for a topic family. */
export function defaultGroupId(service: string, naming: { prefix?: string; tag?: string } = {}): string {
  return `${naming.prefix ?? ''}turnstream.${service}${naming.tag ? `.${naming.tag}` : ''}`;
}

/** The runtime settings of service `name` from its options: its name, Kafka, codecs, group, instance, flow and logger. */
export function serviceRuntime(name: string, options: ServiceOptions) {
  return {
    name,
    kafka: options.kafka,
    codecs: options.codecs,
    groupId: options.groupId ?? defaultGroupId(name, options.codecs.naming),
    instanceId: options.instanceId,
    concurrency: options.concurrency,
    sessionTimeoutMs: options.sessionTimeoutMs ?? PROCESSOR_DEFAULTS.sessionTimeoutMs,
    logger: options.logger,
  };
}
