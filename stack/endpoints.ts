/** Where Kafka, the registry and ClickHouse are for a stack's settings, and a service's link to Kafka. */
import type { Kafka } from 'kafkajs';
import type { Logger } from '../core/index.ts';
import { endpointsOf, resolveStackOptions, type StackEndpoints } from '../infra/index.ts';
import type { TopicNaming } from '../schemas/index.ts';
import { createKafka, parseBrokers, waitForDependencies, type EventCodecs } from '../streams/index.ts';
import type { StackSettings } from './settings.ts';

/** The configured endpoints, else the local stack's (under `home`). */
export function stackEndpoints(
  settings: Pick<StackSettings, 'home' | 'kafkaBrokers' | 'schemaRegistryUrl' | 'clickhouseUrl'>,
): StackEndpoints {
  return endpointsOf(
    resolveStackOptions({
      home: settings.home,
      kafkaBrokers: settings.kafkaBrokers,
      schemaRegistryUrl: settings.schemaRegistryUrl,
      clickhouseUrl: settings.clickhouseUrl,
    }),
  );
}

/** What a service reads and writes Kafka with: a client, the topic family's codecs and where they are. */
export interface StackLink {
  kafka: Kafka;
  codecs: EventCodecs;
  brokers: string[];
  registryUrl: string;
  naming: TopicNaming;
}

/**
 * One service's link to Kafka and the registry (`turnstream train`, `process`, `sink`): its own
 * client, both waited for (a service started before them keeps trying), the settings' topic prefix.
 */
export async function connectService(settings: StackSettings, clientId: string, logger: Logger): Promise<StackLink> {
  const endpoints = stackEndpoints(settings);
  const brokers = parseBrokers(endpoints.brokers);
  const kafka = createKafka({ brokers, clientId, security: settings.security.kafka });
  const naming = { prefix: settings.topicPrefix };
  const codecs = await waitForDependencies({
    kafka,
    brokers: endpoints.brokers,
    registryUrl: endpoints.registryUrl,
    registrySecurity: settings.security.registry,
    naming,
    logger,
  });
  return { kafka, codecs, brokers, registryUrl: endpoints.registryUrl, naming };
}
