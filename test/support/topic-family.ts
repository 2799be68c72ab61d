/** A fresh family of topics on the test stack's Kafka, with its client, codecs and a connected producer, and reading its topics back. */
import type { Kafka } from 'kafkajs';
import type { Logger } from '../../core/index.ts';
import type { TopicId } from '../../schemas/index.ts';
import {
  createEventCodecs,
  createKafka,
  ensureTopics,
  EventProducer,
  readToEnd,
  type EventCodecs,
  type TopicValues,
} from '../../streams/index.ts';
import { ensureStack, uniquePrefix } from './stack.ts';

export interface Family {
  kafka: Kafka;
  codecs: EventCodecs;
  producer: EventProducer;
  prefix: string;
  close(): Promise<void>;
}

/** Every topic under a fresh prefix made from `name`, with a client, codecs and a connected producer. */
export async function family(name: string, partitions = 2, opts: { logger?: Logger } = {}): Promise<Family> {
  const stack = await ensureStack();
  const kafka = createKafka({ brokers: [stack.brokers], clientId: `it-${name}`, logger: opts.logger });
  const prefix = uniquePrefix(name);
  await ensureTopics(kafka, { naming: { prefix }, partitions });
  const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
  const producer = new EventProducer(kafka, codecs);
  await producer.connect();
  return { kafka, codecs, producer, prefix, close: () => producer.disconnect() };
}

/** Every record now in topic `id` of the family, decoded (as plain objects, easy to deepEqual). */
export async function readAll<K extends Exclude<TopicId, 'weightBlobs'>>(
  f: Pick<Family, 'kafka' | 'codecs'>,
  id: K,
  opts: { idleMs?: number } = {},
): Promise<Array<TopicValues[K]>> {
  const out: Array<TopicValues[K]> = [];
  await readToEnd(
    f.kafka,
    f.codecs.topic(id),
    async (r) => {
      // structuredClone: plain objects (Avro decodes to record classes), easy to deepEqual.
      if (r.value) out.push(structuredClone(await f.codecs.of(id).decode(r.value)) as TopicValues[K]);
    },
    opts,
  );
  return out;
}
