/** A Kafka client on the test stack and a connected admin of it, for a test file's `before`. */
import type { Admin, Kafka } from 'kafkajs';
import { createKafka } from '../../streams/index.ts';
import { ensureStack } from './stack.ts';

/** The stack's Kafka under `clientId`, and its admin, connected (the caller disconnects it). */
export async function connectAdmin(clientId: string): Promise<{ kafka: Kafka; admin: Admin }> {
  const stack = await ensureStack();
  const kafka = createKafka({ brokers: stack.brokers.split(','), clientId });
  const admin = kafka.admin();
  await admin.connect();
  return { kafka, admin };
}
