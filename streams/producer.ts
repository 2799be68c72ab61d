/** Typed Avro producer: idempotent, acks=all, keys as UTF-8 strings. */
import { Partitioners, type IHeaders, type Kafka, type Message, type Producer } from 'kafkajs';
import type { TopicId } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from './errors.ts';
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

  /** Encodes one batch of events and sends it; resolves when every event is acknowledged by all in-sync replicas. */
  async sendAll(events: OutgoingEvent[]): Promise<void> {
    if (events.length === 0) return;
    const byTopic = new Map<string, Message[]>();
    for (const e of events) {
      const codec = this.codecs.of(e.id);
      const msg: Message = { key: e.key, value: await codec.encode(e.value as never), headers: e.headers };
      const list = byTopic.get(codec.topic) ?? [];
      list.push(msg);
      byTopic.set(codec.topic, list);
    }
    try {
      await this.producer.sendBatch({
        acks: -1,
        timeout: this.timeoutMs,
        topicMessages: [...byTopic.entries()].map(([topic, messages]) => ({ topic, messages })),
      });
    } catch (err) {
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
