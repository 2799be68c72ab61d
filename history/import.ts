/**
 * `turnstream import`: a JSONL history file into the turns topic (and the feedback topic when a
 * record carries explicit feedback).
 *
 * - Every line is validated; a bad line is reported with its line number and reason, and the
 *   import goes on.
 * - Ids are deterministic (schemas/deterministic-id.ts). Before producing, the ids already in the turns and
 *   feedback topics are read (only the first Avro field, `turnId` / `feedbackId`, is decoded), so
 *   importing the same file twice adds nothing. This costs one scan of each topic per import; it
 *   needs no extra state and is exact as long as two imports of the same file do not run at once.
 * - Original times are kept: in the events and as the Kafka record timestamps, so a replay
 *   `--from <time>` finds imported history by its own time.
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Kafka, Message, Producer } from 'kafkajs';
import type { Feedback, Turn } from '../schemas/index.ts';
import { partitioner, readToEnd, type EventCodecs } from '../streams/index.ts';
import type { Logger } from '../core/index.ts';
import { ImportLineError, type ParsedLine } from './formats/common.ts';
import { openaiChatParser } from './formats/openai-chat.ts';
import { openclawRecordParser } from './formats/openclaw-record.ts';

export const IMPORT_FORMATS = ['openclaw-record', 'openai-chat'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

export interface ImportOptions {
  kafka: Kafka;
  /** Codecs of the live topic family (a replay tag does not change the turns topic). */
  codecs: EventCodecs;
  /** Path of the JSONL file. */
  file: string;
  format: ImportFormat;
  /** Events per produce request. @default 500 */
  batchSize?: number;
  /** Called after each line (and once at the end). */
  onProgress?: (p: ImportProgress) => void;
  /** The time of records that carry none. @default Date.now */
  now?: () => number;
  logger?: Logger;
}

export interface ImportProgress {
  bytesRead: number;
  totalBytes: number;
  lines: number;
  imported: number;
  duplicates: number;
  rejected: number;
}

export interface ImportError {
  /** 1-based line number in the file. */
  line: number;
  reason: string;
}

export interface ImportSummary {
  file: string;
  format: ImportFormat;
  /** Non-blank lines read. */
  read: number;
  /** Sessions the accepted lines hold (a conversation per line in `openai-chat`). */
  conversations: number;
  /** New turns produced. */
  imported: number;
  /** Turns of the accepted lines (new or not) whose next state the file holds: the next turn, or the user's last word. */
  nextStates: number;
  /** Turns already in the topic (an earlier import) or repeated in the file. */
  duplicates: number;
  /** Lines rejected (see `errors`). */
  rejected: number;
  feedbackImported: number;
  feedbackDuplicates: number;
  errors: ImportError[];
  durationMs: number;
}

export function parserFor(format: ImportFormat, now?: () => number): (rec: unknown) => ParsedLine {
  if (format === 'openclaw-record') return openclawRecordParser(now);
  if (format === 'openai-chat') return openaiChatParser(now);
  throw new Error(`unknown import format "${format as string}"; expected ${IMPORT_FORMATS.join(' or ')}`);
}

/** Parses one line of a file; throws `ImportLineError` with the reason. */
export function parseLine(parse: (rec: unknown) => ParsedLine, line: string): ParsedLine {
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch (err) {
    throw new ImportLineError(`not valid JSON: ${(err as Error).message}`);
  }
  return parse(rec);
}

/**
 * The first field of a Confluent-framed Avro record that starts with a string (turnId,
 * feedbackId): magic byte, 4-byte schema id, then zigzag-varint length and UTF-8 bytes.
 */
export function leadingStringOf(value: Buffer | null): string | null {
  if (!value || value.length < 6 || value[0] !== 0) return null;
  let pos = 5;
  let n = 0;
  let shift = 0;
  for (;;) {
    if (pos >= value.length || shift > 28) return null;
    const b = value[pos++];
    n |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7;
  }
  const len = (n >>> 1) ^ -(n & 1);
  if (len < 0 || pos + len > value.length) return null;
  return value.toString('utf8', pos, pos + len);
}

/** Every id already in a topic whose values start with their id. */
export async function existingIds(kafka: Kafka, topic: string): Promise<Set<string>> {
  const ids = new Set<string>();
  await readToEnd(kafka, topic, (r) => {
    const id = leadingStringOf(r.value);
    if (id !== null) ids.add(id);
  });
  return ids;
}

type OutgoingMessage = { topic: string; message: Message };

/**
 * A parsed line's turns and feedback not in the topics yet, encoded. The whole line is encoded
 * before anything of it is sent: a line is imported entirely or rejected.
 */
async function encodeLine(
  parsed: ParsedLine,
  turnIds: ReadonlySet<string>,
  feedbackIds: ReadonlySet<string>,
  codecs: EventCodecs,
): Promise<{ fresh: { turns: Turn[]; feedback: Feedback[] }; out: OutgoingMessage[] }> {
  const fresh: { turns: Turn[]; feedback: Feedback[] } = { turns: [], feedback: [] };
  for (const t of parsed.turns) if (!turnIds.has(t.turnId)) fresh.turns.push(t);
  for (const f of parsed.feedback) if (!feedbackIds.has(f.feedbackId)) fresh.feedback.push(f);
  const out: OutgoingMessage[] = [];
  for (const t of fresh.turns)
    out.push({
      topic: codecs.topic('turns'),
      message: { key: t.sessionId, value: await codecs.of('turns').encode(t), timestamp: String(t.requestedAt) },
    });
  for (const f of fresh.feedback)
    out.push({
      topic: codecs.topic('feedback'),
      message: { key: f.sessionId, value: await codecs.of('feedback').encode(f), timestamp: String(f.createdAt) },
    });
  return { fresh, out };
}

export async function importFile(options: ImportOptions): Promise<ImportSummary> {
  const t0 = Date.now();
  const { kafka, codecs, file, format } = options;
  const totalBytes = statSync(file).size;
  const parse = parserFor(format, options.now);
  const batchSize = options.batchSize ?? 500;
  const [turnIds, feedbackIds] = await Promise.all([
    existingIds(kafka, codecs.topic('turns')),
    existingIds(kafka, codecs.topic('feedback')),
  ]);
  options.logger?.debug({ turns: turnIds.size, feedback: feedbackIds.size }, 'ids already in the topics');

  const summary: ImportSummary = {
    file,
    format,
    read: 0,
    conversations: 0,
    imported: 0,
    nextStates: 0,
    duplicates: 0,
    rejected: 0,
    feedbackImported: 0,
    feedbackDuplicates: 0,
    errors: [],
    durationMs: 0,
  };
  const producer: Producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: partitioner });
  await producer.connect();
  let pending: OutgoingMessage[] = [];
  const flush = async () => {
    if (pending.length === 0) return;
    const byTopic = new Map<string, Message[]>();
    for (const p of pending) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.message]);
    pending = [];
    await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
  };

  const sessions = new Set<string>();
  let bytesRead = 0;
  let lineNo = 0;
  const progress = () =>
    options.onProgress?.({
      bytesRead,
      totalBytes,
      lines: summary.read,
      imported: summary.imported,
      duplicates: summary.duplicates,
      rejected: summary.rejected,
    });
  try {
    const rl = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
    for await (const line of rl) {
      lineNo++;
      bytesRead += Buffer.byteLength(line) + 1;
      if (line.trim() === '') continue;
      summary.read++;
      let parsed: ParsedLine;
      let out: OutgoingMessage[];
      try {
        parsed = parseLine(parse, line);
        const encoded = await encodeLine(parsed, turnIds, feedbackIds, codecs);
        const { fresh } = encoded;
        out = encoded.out;
        for (const t of fresh.turns) turnIds.add(t.turnId);
        for (const f of fresh.feedback) feedbackIds.add(f.feedbackId);
        for (const t of parsed.turns) sessions.add(t.sessionId);
        summary.conversations = sessions.size;
        summary.imported += fresh.turns.length;
        summary.nextStates += parsed.nextStates;
        summary.duplicates += parsed.turns.length - fresh.turns.length;
        summary.feedbackImported += fresh.feedback.length;
        summary.feedbackDuplicates += parsed.feedback.length - fresh.feedback.length;
      } catch (err) {
        summary.rejected++;
        summary.errors.push({ line: lineNo, reason: (err as Error).message });
        progress();
        continue;
      }
      pending.push(...out);
      if (pending.length >= batchSize) await flush();
      progress();
    }
    await flush();
  } finally {
    await producer.disconnect().catch(() => undefined);
  }
  bytesRead = totalBytes;
  progress();
  summary.durationMs = Date.now() - t0;
  return summary;
}
