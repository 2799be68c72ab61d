/**
 * Dead letters after the fact (`turnstream dlq`): read a family's DLQ, pick letters by stage,
 * code, original topic and time, and re-send a letter's original record (its key and raw bytes)
 * to its original topic once its cause is fixed.
 *
 * A letter is re-sent at most once. Each re-send is one Kafka transaction holding the record and
 * a DeadLetterReplay marker (key: the letter's id) on the compacted `dlq-replays` topic, so the
 * marker is there exactly when the record is. Before sending, the replayer claims one
 * transactional id per family (fencing a concurrent replay), then reads the markers, which are
 * final from then on: a letter with a marker is skipped. A replay that failed half-way is run
 * again and sends only what has no marker.
 */
import type { Kafka } from 'kafkajs';
import type { Logger } from '../core/index.ts';
import { deterministicId, type DeadLetter } from '../schemas/index.ts';
import type { EventCodecs } from './event-codecs.ts';
import { readToEnd } from './topic-reader.ts';
import { Transactions } from './transactions.ts';

/** Which dead letters: every given field must match. */
export interface DeadLetterFilter {
  /** The stage that dead-lettered it (`judge`, `session-assembler`, `clickhouse-sink`, …). @default any */
  stage?: string;
  /** Its error code (`TS_ERR_JUDGE_FAILED`, …). @default any */
  code?: string;
  /** Its original topic (the full name). @default any */
  topic?: string;
  /** Failed at or after this time (epoch ms). @default no bound */
  since?: number;
  /** Failed before this time (epoch ms). @default no bound */
  until?: number;
  /** Ids or unique id prefixes (at least 6 characters). @default any */
  ids?: readonly string[];
}

/** A dead letter as the DLQ holds it, with its id and whether it was re-sent. */
export interface StoredDeadLetter extends DeadLetter {
  /** `deterministicId('dead-letter', stage, topic, partition, offset)`: the same failure is one letter. */
  id: string;
  /** Where the letter itself is in the DLQ topic. */
  dlqPartition: number;
  dlqOffset: string;
  /** When `turnstream dlq replay` re-sent it; null if never. */
  replayedAt: number | null;
}

export interface DeadLetterReplayOptions {
  logger: Logger;
  /** Only report what would be re-sent. @default false */
  dryRun?: boolean;
  /** Clock of the markers. @default Date.now */
  now?: () => number;
}

export interface DeadLetterReplayResult {
  /** Re-sent now (or, on a dry run, that would be). */
  replayed: StoredDeadLetter[];
  /** Chosen but not re-sent, and why. */
  skipped: Array<{ letter: StoredDeadLetter; reason: 'already replayed' | 'no value' }>;
}

/** The id of a dead letter: its stage and the coordinates of the record that failed. */
export const deadLetterId = (l: Pick<DeadLetter, 'stage' | 'topic' | 'partition' | 'offset'>): string =>
  deterministicId('dead-letter', l.stage, l.topic, l.partition, l.offset);

/** The transactional id of a family's replays: one replay at a time per family. */
const replayerId = (codecs: EventCodecs): string =>
  `${codecs.naming.prefix ?? ''}turnstream-dlq-replay${codecs.naming.tag ? `.${codecs.naming.tag}` : ''}`;

/** When each letter was re-sent, by id, from the markers. */
async function readReplays(kafka: Kafka, codecs: EventCodecs): Promise<Map<string, number>> {
  const replays = new Map<string, number>();
  const codec = codecs.of('dlqReplays');
  await readToEnd(kafka, codecs.topic('dlqReplays'), async (r) => {
    if (!r.value) return;
    const m = await codec.decode(r.value);
    replays.set(m.deadLetterId, m.replayedAt);
  });
  return replays;
}

/** Whether a letter passes the filter (ids as given or as unique prefixes, resolved by the caller). */
function matches(l: StoredDeadLetter, f: DeadLetterFilter): boolean {
  return (
    (f.stage === undefined || l.stage === f.stage) &&
    (f.code === undefined || l.code === f.code) &&
    (f.topic === undefined || l.topic === f.topic) &&
    (f.since === undefined || l.failedAt >= f.since) &&
    (f.until === undefined || l.failedAt < f.until) &&
    (f.ids === undefined || f.ids.some((id) => l.id.startsWith(id)))
  );
}

/**
 * The family's dead letters that match `filter`, oldest first, each once (the same failure
 * dead-lettered again is one letter), with when it was re-sent.
 */
export async function readDeadLetters(kafka: Kafka, codecs: EventCodecs, filter: DeadLetterFilter = {}): Promise<StoredDeadLetter[]> {
  const replays = await readReplays(kafka, codecs);
  const codec = codecs.of('dlq');
  const letters = new Map<string, StoredDeadLetter>();
  await readToEnd(kafka, codecs.topic('dlq'), async (r) => {
    if (!r.value) return;
    // Spread, not structuredClone: that would turn the key's and value's Buffers into Uint8Arrays.
    const d = { ...(await codec.decode(r.value)) };
    const id = deadLetterId(d);
    if (letters.has(id)) return;
    letters.set(id, { ...d, id, dlqPartition: r.partition, dlqOffset: r.offset, replayedAt: replays.get(id) ?? null });
  });
  return [...letters.values()].filter((l) => matches(l, filter)).sort((a, b) => a.failedAt - b.failedAt || a.id.localeCompare(b.id));
}

/**
 * Re-sends the matching letters that were never re-sent: each letter's key and value to its
 * original topic, with its marker, in one transaction per letter.
 */
export async function replayDeadLetters(
  kafka: Kafka,
  codecs: EventCodecs,
  filter: DeadLetterFilter,
  o: DeadLetterReplayOptions,
): Promise<DeadLetterReplayResult> {
  const txns = new Transactions({ kafka, transactionalId: replayerId(codecs), logger: o.logger });
  await txns.connect();
  try {
    // After the claim no earlier replay can still commit: the markers read next are final.
    await txns.claim();
    const letters = await readDeadLetters(kafka, codecs, filter);
    const result: DeadLetterReplayResult = { replayed: [], skipped: [] };
    const marker = codecs.of('dlqReplays');
    for (const letter of letters) {
      if (letter.replayedAt !== null) {
        result.skipped.push({ letter, reason: 'already replayed' });
        continue;
      }
      if (!letter.value) {
        result.skipped.push({ letter, reason: 'no value' });
        continue;
      }
      if (!o.dryRun) {
        const replayedAt = (o.now ?? Date.now)();
        const mark = await marker.encode({
          deadLetterId: letter.id,
          topic: letter.topic,
          partition: letter.partition,
          offset: letter.offset,
          stage: letter.stage,
          code: letter.code,
          replayedAt,
        });
        const value = letter.value;
        await txns.commit(
          () => ({
            outputs: [
              { topic: letter.topic, key: letter.key?.toString('utf8') ?? '', value },
              { topic: codecs.topic('dlqReplays'), key: letter.id, value: mark },
            ],
          }),
          { attempts: 5 },
        );
        letter.replayedAt = replayedAt;
        o.logger.info({ id: letter.id, topic: letter.topic, stage: letter.stage, code: letter.code }, 'dead letter re-sent');
      }
      result.replayed.push(letter);
    }
    return result;
  } finally {
    await txns.disconnect();
  }
}
