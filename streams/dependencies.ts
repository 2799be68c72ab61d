/**
 * What a service needs before it starts consuming: its topics on Kafka and its schemas in the
 * registry. A service started before them (a fresh machine, `turnstream up` racing the stack,
 * a registry restarting) waits for them with backoff, saying in its log what it waits for,
 * instead of exiting at once.
 */
import type { Kafka } from 'kafkajs';
import type { RegistrySecurity, TopicId, TopicNaming } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError, retry, type Logger } from '../core/index.ts';
import { createEventCodecs, type EventCodecs } from './event-codecs.ts';
import { ensureTopics } from './topic-admin.ts';

export interface DependenciesOptions {
  kafka: Kafka;
  /** For the log lines: where Kafka is. */
  brokers: string;
  registryUrl: string;
  /** Basic auth and TLS trust of the registry. @default none */
  registrySecurity?: RegistrySecurity;
  naming?: TopicNaming;
  /** Topics to create (all by default). */
  ids?: readonly TopicId[];
  logger: Logger;
  /** First wait; doubles up to `maxDelayMs`. @default 1000 */
  minDelayMs?: number;
  /** @default 15000 */
  maxDelayMs?: number;
  /** Give up after this long (then the supervisor restarts the service). @default forever */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Topics and codecs (schemas registered), waiting for Kafka and the registry as long as it takes. */
export async function waitForDependencies(o: DependenciesOptions): Promise<EventCodecs> {
  let what: 'Kafka' | 'the schema registry' = 'Kafka';
  return retry(
    async () => {
      what = 'Kafka';
      await ensureTopics(o.kafka, { naming: o.naming, ids: o.ids });
      what = 'the schema registry';
      return createEventCodecs({ registryUrl: o.registryUrl, registrySecurity: o.registrySecurity, naming: o.naming });
    },
    {
      baseMs: o.minDelayMs ?? 1000,
      maxMs: o.maxDelayMs ?? 15_000,
      maxTimeMs: o.timeoutMs,
      signal: o.signal,
      // Whatever kafkajs or the registry client says: only a bad setting of ours is final (a
      // refused login or an untrusted certificate among them: ensureTopics and the codecs name it).
      retryIf: (err) => !(err instanceof TurnstreamError && err.code === ErrorCodes.INVALID_INPUT),
      onRetry: (err, attempt) => {
        const where = what === 'Kafka' ? o.brokers : o.registryUrl;
        o.logger.warn({ waitingFor: what, at: where, attempt, err: (err as Error).message }, `waiting for ${what} at ${where}`);
      },
    },
  );
}
