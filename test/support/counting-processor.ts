/**
 * A small processor used by the runtime's tests: for each Turn it counts the session's turns
 * in changelog-backed state and emits one TurnPair whose mainTurnIndex is that count.
 * Run as a child process (for kill -9 tests) with:
 *   tsx test/support/counting-processor.ts <brokers> <registryUrl> <prefix> <delayMs> [instance]
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createEventCodecs, createKafka, runProcessor, type EventCodecs, type ProcessorHandle } from '../../streams/index.ts';
import type { SessionState, Turn } from '../../schemas/index.ts';
import type { Kafka } from 'kafkajs';
import { examplePair, exampleSessionState } from './fixtures.ts';

export interface CountingOptions {
  kafka: Kafka;
  codecs: EventCodecs;
  groupId: string;
  delayMs?: number;
  instanceId?: string;
  concurrency?: number;
  sessionTimeoutMs?: number;
}

export function startCountingProcessor(o: CountingOptions): Promise<ProcessorHandle> {
  return runProcessor<SessionState>({
    name: 'counting',
    kafka: o.kafka,
    codecs: o.codecs,
    groupId: o.groupId,
    instanceId: o.instanceId,
    inputs: ['turns'],
    state: { topic: 'sessionState' },
    concurrency: o.concurrency ?? 32,
    sessionTimeoutMs: o.sessionTimeoutMs,
    logger: undefined,
    async handle(record, ctx) {
      const turn = record.value as Turn;
      if (o.delayMs) await sleep(o.delayMs);
      const prev = ctx.state.get(record.key);
      const count = (prev?.mainTurnCount ?? 0) + 1;
      ctx.state.put(record.key, exampleSessionState({ sessionId: record.key, mainTurnCount: count, pending: null, recentIds: [] }));
      const pair = examplePair({ pairId: turn.turnId, sessionId: turn.sessionId });
      ctx.emit('pairs', record.key, { ...pair, turn: { ...pair.turn, turnId: turn.turnId, mainTurnIndex: count } });
    },
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [brokers, registryUrl, prefix, delay, instance] = process.argv.slice(2);
  const kafka = createKafka({ brokers: [brokers], clientId: 'counting-child' });
  const codecs = await createEventCodecs({ registryUrl, naming: { prefix } });
  const h = await startCountingProcessor({
    kafka,
    codecs,
    groupId: `${prefix}counting`,
    delayMs: Number(delay),
    instanceId: instance ?? '0',
  });
  await h.ready;
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => void h.stop().then(() => process.exit(0)));
}
