/** Typed Avro producer: idempotent, acks=all, keys as UTF-8 strings. */
import type { IHeaders, Kafka, Message, Producer } from 'kafkajs';
import { Partitioners } from './kafkajs.ts';
import { TOPICS, type TopicId } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import type { EventCodecs, TopicValues } from './event-codecs.ts';

export interface EventProducerOptions {
  /** How long one send may take before it fails (and the caller may fall back). @default 30000 */
  timeoutMs?: number;
  /** kafkajs retries per send. @default 5 */
  retries?: number;
}

export interface OutgoingEvent<K extends TopicId = TopicId> {
  id: K;
  key: string;
  value: TopicValues[K];
  headers?: IHeaders;
}

/** The partitioner every turnstream producer uses, so co-keyed topics stay co-partitioned. */
export const partitioner = Partitioners.DefaultPartitioner;

/** Room a record needs beyond its value within a topic's `max.message.bytes`: key, headers, batch and record overhead. */
export const RECORD_OVERHEAD_BYTES = 16 * 1024;

/** Bytes of records per produce request: a record batch stays well under any topic's limit. */
export const MAX_SEND_BYTES = 512 * 1024;

/** Largest encoded value (header included) a record of topic `id` may carry. */
export const maxValueBytes = (id: TopicId): number => TOPICS[id].maxMessageBytes - RECORD_OVERHEAD_BYTES;

/** The broker refuses the records themselves: sending them again cannot succeed. */
const REFUSED = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'INVALID_TIMESTAMP']);

/** The protocol error type behind a kafkajs error, looked for through its wrappers. */
export function kafkaErrorType(err: unknown): string | undefined {
  for (let e = err as { type?: string; originalError?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; i++) {
    if (typeof e.type === 'string') return e.type;
    e = (e.originalError ?? e.cause) as typeof e;
  }
  return undefined;
}

/** Consecutive runs of `items` of at most `max` bytes each (a bigger single item alone). */
export function chunksOf<T>(items: T[], size: (item: T) => number, max: number): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const n = size(item);
    if (chunk.length > 0 && bytes + n > max) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += n;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

export class EventProducer {
  readonly producer: Producer;
  private readonly codecs: EventCodecs;
  private readonly timeoutMs: number;
  private connected = false;

  constructor(kafka: Kafka, codecs: EventCodecs, options: EventProducerOptions = {}) {
    this.codecs = codecs;
    this.timeoutMs = options.timeoutMs ?? 30000;
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: partitioner,
      retry: { retries: options.retries ?? 5 },
    });
  }

  async connect(): Promise<void> {
    if (this.connected) return;
    await this.producer.connect();
    this.connected = true;
  }

  /**
   * Encodes one batch of events and sends it, in order, in requests of at most MAX_SEND_BYTES;
   * resolves when every event is acknowledged by all in-sync replicas. Every event is encoded
   * and sized first: one that cannot be encoded or is larger than its topic allows fails the
   * whole call before anything is sent, with a non-retriable error. So does a batch the broker
   * refuses as such (MESSAGE_TOO_LARGE, INVALID_RECORD); anything else is retriable.
   */
  async sendAll(events: OutgoingEvent[]): Promise<void> {
    if (events.length === 0) return;
    const encoded: Array<{ topic: string; msg: Message; bytes: number }> = [];
    for (const e of events) {
      const codec = this.codecs.of(e.id);
      let value: Buffer;
      try {
        value = await codec.encode(e.value as never);
      } catch (err) {
        throw new TurnstreamError(
          ErrorCodes.INVALID_INPUT,
          `cannot encode a ${codec.topic} event (key ${e.key}): ${(err as Error).message}`,
          {
            cause: err,
            retriable: false,
          },
        );
      }
      if (value.length > maxValueBytes(e.id)) {
        throw new TurnstreamError(
          ErrorCodes.TOO_LARGE,
          `a ${codec.topic} event (key ${e.key}) is ${value.length} bytes; the topic takes at most ${maxValueBytes(e.id)}`,
          { retriable: false },
        );
      }
      encoded.push({
        topic: codec.topic,
        msg: { key: e.key, value, headers: e.headers },
        bytes: value.length + Buffer.byteLength(e.key) + 70,
      });
    }
    try {
      for (const chunk of chunksOf(encoded, (x) => x.bytes, MAX_SEND_BYTES)) {
        const byTopic = new Map<string, Message[]>();
        for (const { topic, msg } of chunk) {
          const list = byTopic.get(topic) ?? [];
          list.push(msg);
          byTopic.set(topic, list);
        }
        await this.producer.sendBatch({
          acks: -1,
          timeout: this.timeoutMs,
          topicMessages: [...byTopic.entries()].map(([topic, messages]) => ({ topic, messages })),
        });
      }
    } catch (err) {
      const type = kafkaErrorType(err);
      if (type && REFUSED.has(type)) {
        throw new TurnstreamError(ErrorCodes.TOO_LARGE, `kafka refused the records (${type}): ${(err as Error).message}`, {
          cause: err,
          retriable: false,
        });
      }
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `kafka send failed: ${(err as Error).message}`, { cause: err });
    }
  }

  send<K extends TopicId>(id: K, key: string, value: TopicValues[K], headers?: IHeaders): Promise<void> {
    return this.sendAll([{ id, key, value, headers } as OutgoingEvent]);
  }

  async disconnect(): Promise<void> {
    if (!this.connected) return;
    this.connected = false;
    await this.producer.disconnect();
  }
}
