/**
 * A small processor used by the runtime's tests: for each Turn it counts the session's turns
 * in changelog-backed state and emits one TurnPair whose mainTurnIndex is that count.
 * With `batch` it takes each fetched batch in one call (`handleBatch`). A turn whose id starts
 * with `poison-` is refused for good (a non-retriable error).
 * Run as a child process (for kill -9 tests) with:
 *   tsx test/support/counting-processor.ts <brokers> <registryUrl> <prefix> <delayMs> [instance] [batch]
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createEventCodecs,
  createKafka,
  runProcessor,
  type EventCodecs,
  type EventProducer,
  type HandlerContext,
  type InputRecord,
  type ProcessorHandle,
} from '../../streams/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import type { SessionState, Turn } from '../../schemas/index.ts';
import type { Kafka } from 'kafkajs';
import { examplePair, exampleSessionState, exampleTurn } from './fixtures.ts';

export interface CountingOptions {
  kafka: Kafka;
  codecs: EventCodecs;
  groupId: string;
  delayMs?: number;
  instanceId?: string;
  concurrency?: number;
  sessionTimeoutMs?: number;
  /** Each fetched batch in one call. @default false */
  batch?: boolean;
  /** Called with the size of each batch handed over (with `batch`). */
  onBatch?: (records: number) => void;
}

export function startCountingProcessor(o: CountingOptions): Promise<ProcessorHandle> {
  const count = async (record: InputRecord, ctx: HandlerContext<SessionState>): Promise<void> => {
    const turn = record.value as Turn;
    if (turn.turnId.startsWith('poison-'))
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `refused ${turn.turnId}`, { retriable: false });
    if (o.delayMs) await sleep(o.delayMs); // deliberate: a slow handler, when a test asks for one
    const prev = ctx.state.get(record.key);
    const n = (prev?.mainTurnCount ?? 0) + 1;
    ctx.state.put(record.key, exampleSessionState({ sessionId: record.key, mainTurnCount: n, pending: null, recentIds: [] }));
    const pair = examplePair({ pairId: turn.turnId, sessionId: turn.sessionId });
    ctx.emit('pairs', record.key, { ...pair, turn: { ...pair.turn, turnId: turn.turnId, mainTurnIndex: n } });
  };
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
    ...(o.batch
      ? {
          async handleBatch(records: InputRecord[], ctx: HandlerContext<SessionState>) {
            o.onBatch?.(records.length);
            for (const r of records) await count(r, ctx);
          },
        }
      : { handle: count }),
  });
}

/** The counting processor's input: `perSession` turns for each of `sessions` sessions (keys s0…), in session-interleaved order, `tag` before each id; their ids. */
export async function produceTurns(producer: EventProducer, sessions: number, perSession: number, tag = ''): Promise<string[]> {
  const ids: string[] = [];
  const events = [];
  for (let i = 0; i < perSession; i++) {
    for (let s = 0; s < sessions; s++) {
      const turnId = `${tag}${randomUUID()}`;
      ids.push(turnId);
      events.push({ id: 'turns' as const, key: `s${s}`, value: exampleTurn({ turnId, sessionId: `s${s}` }) });
    }
  }
  for (let i = 0; i < events.length; i += 100) await producer.sendAll(events.slice(i, i + 100));
  return ids;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [brokers, registryUrl, prefix, delay, instance, batch] = process.argv.slice(2);
  const kafka = createKafka({ brokers: [brokers], clientId: 'counting-child' });
  const codecs = await createEventCodecs({ registryUrl, naming: { prefix } });
  const h = await startCountingProcessor({
    kafka,
    codecs,
    groupId: `${prefix}counting`,
    delayMs: Number(delay),
    instanceId: instance ?? '0',
    batch: batch === 'batch',
  });
  await h.ready;
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => void h.stop().then(() => process.exit(0)));
}
