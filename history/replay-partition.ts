/**
 * One partition of the range through the event-time assembler: its turns and feedback decoded
 * (what cannot be decoded is dead-lettered), merged by event time, and the pairs cut into
 * transactions of `batchSize`. Records before the committed position (a resumed replay) run
 * through the assembler, which is deterministic on event time, without being emitted again;
 * the last transaction moves the position to the range's end.
 */
import type { TurnPair } from '../schemas/index.ts';
import { deadLetter, type EventCodecs, type RawRecord } from '../streams/index.ts';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { assemblePartition, EventTimeAssembler, type HistoryEvent } from './event-time-assembler.ts';
import type { PendingDeadLetter } from './replay-outputs.ts';
import type { ReplayRun } from './replay-run.ts';
import { replayBatch } from './replay-transaction.ts';

/** The events of `raw`; a record that cannot be decoded is dead-lettered, unless it precedes `done` (it was already). */
async function decodeEvents(
  codecs: EventCodecs,
  id: 'turns' | 'feedback',
  raw: RawRecord[],
  done: bigint,
  dead: PendingDeadLetter[],
): Promise<HistoryEvent[]> {
  const out: HistoryEvent[] = [];
  for (const r of raw) {
    try {
      if (!r.value) throw new TurnstreamError(ErrorCodes.DECODE, 'record has no value (tombstone)', { retriable: false });
      const value = codecs.of(id).decodeNow(r.value) ?? (await codecs.of(id).decode(r.value));
      out.push({ topicId: id, offset: BigInt(r.offset), value } as HistoryEvent);
    } catch (err) {
      // Only once: a record before the committed position was dead-lettered already.
      if (BigInt(r.offset) >= done) dead.push({ key: r.key?.toString('utf8') ?? '', dl: deadLetter(r, err, 'session-assembler', 1) });
    }
  }
  return out;
}

export async function replayPartition(run: ReplayRun, p: number, rawTurns: RawRecord[], rawFeedback: RawRecord[]): Promise<void> {
  const done = run.positions.committed(p);
  const dead: PendingDeadLetter[] = [];
  const tEvents = await decodeEvents(run.codecs, 'turns', rawTurns, done.turns, dead);
  const fEvents = await decodeEvents(run.codecs, 'feedback', rawFeedback, done.feedback, dead);
  const asm = new EventTimeAssembler({ ...run.o.assembler, tag: run.o.tag });
  let nextT = done.turns;
  let nextF = done.feedback;
  let batch: TurnPair[] = [];
  let read = 0;
  let added = 0;
  for (const { event: e, pairs } of assemblePartition(asm, tEvents, fEvents, Date.now)) {
    if (!e) {
      for (const x of pairs) batch.push(x);
      break;
    }
    if (e.offset < done[e.topicId]) continue;
    if (batch.length >= run.batchSize) {
      await replayBatch(run, { partition: p, pairs: batch, dead: dead.splice(0), position: { turns: nextT, feedback: nextF }, read });
      added += read;
      batch = [];
      read = 0;
    }
    read++;
    for (const x of pairs) batch.push(x);
    if (e.topicId === 'turns') nextT = e.offset + 1n;
    else nextF = e.offset + 1n;
  }
  // The last transaction moves the position to the range's end: the partition is done.
  const rest = run.positions.size(p) - added;
  await replayBatch(run, { partition: p, pairs: batch, dead: dead.splice(0), position: run.positions.end(p), read: rest });
  const ig = asm.counts;
  if (ig.lostFeedback > 0 || Object.keys(ig.ignored).length > 0) run.log.debug({ partition: p, ...ig }, 'assembler left events out');
}
