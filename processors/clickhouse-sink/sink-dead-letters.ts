/**
 * Records the sink cannot store go to the DLQ with their reason; a record of the DLQ itself
 * that fails is counted and skipped (dead-lettering it would feed it back to the sink).
 */
import type { KafkaMessage } from 'kafkajs';
import type { TopicId } from '../../schemas/index.ts';
import { deadLetter, type EventProducer } from '../../streams/index.ts';
import { toTurnstreamError, type Logger } from '../../core/index.ts';
import type { SinkCounters } from './sink-stats.ts';

export class SinkDeadLetters {
  constructor(
    private readonly producer: EventProducer,
    private readonly stage: string,
    private readonly counters: SinkCounters,
    private readonly log: Logger,
  ) {}

  async send(id: TopicId, topic: string, partition: number, m: KafkaMessage, err: unknown): Promise<void> {
    const e = toTurnstreamError(err);
    if (id === 'dlq') {
      // Dead-lettering a dead letter would feed it back to us: count it and move on.
      this.counters.skipped('bad_dead_letter');
      this.log.error({ topic, partition, offset: m.offset, code: e.code, err: e.message }, 'unreadable dead letter skipped');
      return;
    }
    const dl = deadLetter({ topic, partition, offset: m.offset, key: m.key ?? null, value: m.value ?? null }, e, this.stage, 1);
    await this.producer.send('dlq', m.key?.toString('utf8') ?? '', dl);
    this.counters.deadLettered(e.code);
    this.log.warn({ topic, partition, offset: m.offset, code: e.code, err: e.message }, 'record dead-lettered');
  }
}
