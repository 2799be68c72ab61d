/**
 * Registers turnstream's schemas with a Confluent-compatible registry (Apicurio's ccompat
 * API here) under the TopicNameStrategy, with BACKWARD compatibility.
 */
import { Compatibility, SchemaRegistryClient, type Client } from '@confluentinc/schemaregistry';
import { ErrorCodes, TurnstreamError } from '../streams/errors.ts';
import { TOPICS, topicName, valueSubject, type TopicId, type TopicNaming } from './topics.ts';

export interface RegistryOptions {
  /** e.g. http://127.0.0.1:8081/apis/ccompat/v7 */
  url: string;
  /** Retries of each registry call. @default 3 */
  maxRetries?: number;
}

export function createRegistryClient(options: RegistryOptions): Client {
  return new SchemaRegistryClient({
    baseURLs: [options.url],
    maxRetries: options.maxRetries ?? 3,
    retriesWaitMs: 200,
    retriesMaxWaitMs: 2000,
    cacheCapacity: 1000,
  });
}

/** Schema ids by topic id, for the topics that were registered. */
export type SchemaIds = Partial<Record<TopicId, number>>;

/** Sets BACKWARD compatibility and registers each topic's value schema; idempotent. */
export async function registerSchemas(
  client: Client,
  naming: TopicNaming = {},
  ids: readonly TopicId[] = Object.keys(TOPICS) as TopicId[],
): Promise<SchemaIds> {
  const out: SchemaIds = {};
  for (const id of ids) {
    const subject = valueSubject(topicName(id, naming));
    const schema = JSON.stringify(TOPICS[id].schema());
    try {
      await client.updateCompatibility(subject, Compatibility.BACKWARD);
      out[id] = await client.register(subject, { schemaType: 'AVRO', schema }, false);
    } catch (err) {
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `could not register ${subject}: ${(err as Error).message}`, { cause: err });
    }
  }
  return out;
}
