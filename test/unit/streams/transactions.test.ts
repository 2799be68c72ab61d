/** Transactions' recovery on a recording producer: which failures replace the producer before the next attempt. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kafka } from 'kafkajs';
import { createLogger } from '../../../core/index.ts';
import { Transactions } from '../../../streams/transactions.ts';

/** A Kafka whose producers log what they do; the first send of producer 1 fails with `type`. */
function recordingKafka(type: string) {
  const log: string[] = [];
  let made = 0;
  const kafka = {
    producer: () => {
      const id = ++made;
      let sends = 0;
      return {
        connect: async () => void log.push(`p${id} connect`),
        disconnect: async () => void log.push(`p${id} disconnect`),
        transaction: async () => ({
          sendBatch: async () => {
            sends++;
            if (id === 1 && sends === 1) throw Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type, retriable: true });
            log.push(`p${id} send`);
            return [{ topicName: 'out', partition: 0, errorCode: 0, baseOffset: '7' }];
          },
          sendOffsets: async () => undefined,
          commit: async () => void log.push(`p${id} commit`),
          abort: async () => void log.push(`p${id} abort`),
        }),
      };
    },
  } as unknown as Kafka;
  return { kafka, log };
}

const content = { outputs: [{ topic: 'out', key: 'k', value: Buffer.from('v') }] };

for (const type of ['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID']) {
  test(`a send refused with ${type} aborts, replaces the producer, and commits on the new one`, async () => {
    const { kafka, log } = recordingKafka(type);
    const tx = new Transactions({ kafka, transactionalId: 'g.partition-0', logger: createLogger('test', 'silent'), retryBaseMs: 1 });
    await tx.connect();
    assert.deepEqual(await tx.commit(() => content), content);
    assert.deepEqual(log, ['p1 connect', 'p1 abort', 'p1 disconnect', 'p2 connect', 'p2 send', 'p2 commit']);
  });
}

test('a send that failed for another reason is retried on the same producer once its transaction is aborted', async () => {
  const { kafka, log } = recordingKafka('REQUEST_TIMED_OUT');
  const tx = new Transactions({ kafka, transactionalId: 'g.partition-0', logger: createLogger('test', 'silent'), retryBaseMs: 1 });
  await tx.connect();
  await tx.commit(() => content);
  assert.deepEqual(log, ['p1 connect', 'p1 abort', 'p1 send', 'p1 commit']);
});
