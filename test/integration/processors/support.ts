/** Shared helpers of the processors' integration tests: a topic family, events, reading topics. */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import type { ChatMessage, Turn } from '../../../schemas/index.ts';
import { createEventCodecs, createKafka, ensureTopics, EventProducer, readToEnd, type EventCodecs, type TopicValues } from '../../../streams/index.ts';
import { exampleTurn } from '../../support/fixtures.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';

export interface Family {
  kafka: Kafka;
  codecs: EventCodecs;
  producer: EventProducer;
  prefix: string;
  close(): Promise<void>;
}

export async function family(name: string): Promise<Family> {
  const stack = await ensureStack();
  const kafka = createKafka({ brokers: [stack.brokers], clientId: `it-${name}` });
  const prefix = uniquePrefix(name);
  await ensureTopics(kafka, { naming: { prefix }, partitions: 2 });
  const codecs = await createEventCodecs({ registryUrl: stack.registryUrl, naming: { prefix } });
  const producer = new EventProducer(kafka, codecs);
  await producer.connect();
  return { kafka, codecs, producer, prefix, close: () => producer.disconnect() };
}

export async function readAll<K extends 'pairs' | 'judgements' | 'samples' | 'dlq' | 'sessionState'>(f: Family, id: K): Promise<Array<TopicValues[K]>> {
  const out: Array<TopicValues[K]> = [];
  await readToEnd(f.kafka, f.codecs.topic(id), async (r) => {
    // structuredClone: plain objects (Avro decodes to record classes), easy to deepEqual.
    if (r.value) out.push(structuredClone(await f.codecs.of(id).decode(r.value)) as TopicValues[K]);
  });
  return out;
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

const msg = (role: string, content: string): ChatMessage => ({ role, content, name: null, toolCallId: null, toolCalls: [] });

/**
 * A conversation of `userMessages.length` main turns in one session: turn i's request is the
 * full history ending with user message i; its reply is `reply i`. Times start now.
 */
export function conversation(sessionId: string, userMessages: string[], over: (i: number) => Partial<Turn> = () => ({})): Turn[] {
  const t0 = Date.now();
  const history: ChatMessage[] = [msg('system', 'Be brief.')];
  return userMessages.map((u, i) => {
    history.push(msg('user', u));
    const turn = exampleTurn({
      turnId: randomUUID(),
      sessionId,
      requestMessages: [...history],
      response: { content: `reply ${i}`, toolCalls: [], finishReason: 'stop' },
      requestedAt: t0 + i * 10,
      completedAt: t0 + i * 10 + 5,
      ...over(i),
    });
    history.push(msg('assistant', `reply ${i}`));
    return turn;
  });
}
