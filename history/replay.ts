/**
 * `turnstream replay`: re-derives pairs, judgements and samples from a range of history with
 * another configuration, into topics of their own (`turnstream.replay.<tag>.*`). The live topics
 * are only read.
 *
 * A batch job, not three stream processors: the range (turns and feedback, resolved once to exact
 * offsets and kept in a plan file, see replay-range.ts) is read with a plain consumer, and the
 * pure cores run in-process, one partition after another (turns and feedback are co-partitioned by
 * session): the session assembler on event time (event-time-assembler.ts), the judge (awaited
 * with bounded concurrency, so an LLM judge is the only bound), the sample builder. Outputs go out
 * in large transactions (`batchSize` pairs and what came of them), each with the position reached
 * in the range committed as the offsets of the replay's group (`turnstream.replay.<tag>`).
 *
 * Resuming: running the same replay again (same tag) reuses the plan. A partition whose offsets
 * reached the range's end is done; any other is read again from the range's start, and the
 * assembler is run over what was committed without emitting (it is deterministic on event time),
 * so each pair, judgement and sample is written exactly once in the tagged topics. The judge only
 * sees pairs that were not written yet.
 *
 * The pairs are the live ones: the assembler's pure core decides by event time, and the live
 * service on the same records with the same configuration gives the same pairs, judgements and
 * samples (test/unit/history/replay-equals-live.test.ts over generated histories and schedules,
 * test/integration/history/replay-equals-live.test.ts on Kafka).
 */
import { topicName, type DeadLetter, type Judgement, type Sample, type TurnPair } from '../schemas/index.ts';
import {
  buildSample,
  defaultGroupId,
  isTrainable,
  type Judge,
  type SampleBuilderOptions,
  type SessionAssemblerOptions,
} from '../processors/index.ts';
import {
  createEventCodecs,
  createLogger,
  deadLetter,
  ensureTopics,
  ErrorCodes,
  retry,
  Transactions,
  TurnstreamError,
  type EventCodecs,
  type Logger,
  type RawRecord,
  type TopicValues,
  type TransactionOutput,
} from '../streams/index.ts';
import type { Kafka } from 'kafkajs';
import { assemblePartition, EventTimeAssembler, type HistoryEvent } from './event-time-assembler.ts';
import { readRanges } from './range-reader.ts';
import { committedOffsets, openPlan, type Bound, type TopicRange } from './replay-range.ts';
import { OutputTally, summarize } from './summary.ts';

export interface ReplayOptions {
  kafka: Kafka;
  registryUrl: string;
  /** Topic and group prefix (tests isolate themselves with one). @default '' */
  prefix?: string;
  /** Replay tag: names the output topics and the groups. Letters, digits, `-` and `_`. */
  tag: string;
  from: Bound;
  /** @default the current end of the history */
  to?: Bound;
  judge: Judge;
  /** Judge untokenized (imported) turns too. @default true */
  judgeUntrainable?: boolean;
  /** The session assembler's configuration: the live service's, for the live pairs. @default the assembler's defaults */
  assembler?: Pick<SessionAssemblerOptions, 'idleTimeoutMs' | 'endPolicy' | 'feedbackGraceMs' | 'closedRetentionMs'>;
  samples?: SampleBuilderOptions;
  /** Judge and teacher calls in flight. @default 64 */
  concurrency?: number;
  /** Pairs per transaction (their judgements and samples go with them). @default 2000 */
  batchSize?: number;
  /** Where the resolved range is kept for resuming (one file per prefix + tag). */
  planFile: string;
  /** Partitions of the tagged topics, when they are created. @default 6 */
  partitions?: number;
  onProgress?: (p: ReplayProgress) => void;
  /** Cancels the replay (stages stop cleanly; run it again to resume). */
  signal?: AbortSignal;
  logger?: Logger;
}

export type StageName = 'session-assembler' | 'judge' | 'sample-builder';

export interface StageProgress {
  stage: StageName;
  /** Offsets consumed of `total` (tagged topics count transaction markers too). */
  consumed: number;
  total: number;
  done: boolean;
}

export interface ReplayProgress {
  stages: StageProgress[];
}

export interface ReplaySummary {
  tag: string;
  from: string;
  to: string | null;
  /** True when an earlier run of this replay was continued. */
  resumed: boolean;
  interrupted: boolean;
  range: { turns: number; feedback: number };
  /** Records after the range's end that were fetched and left out: 0, the range is read to its exact offsets. */
  skippedPastEnd: number;
  topics: Record<'pairs' | 'judgements' | 'samples' | 'dlq', string>;
  /** `withNextState`: pairs with something that followed the turn (the rest are end markers alone). */
  pairs: { total: number; byEnd: Record<string, number>; withNextState: number };
  /** `votes`: valid votes over all judgements; `withoutVotes`: judgements with nothing to judge (no next state, no feedback). */
  judgements: { total: number; byScore: Record<string, number>; judgeIds: string[]; votes: number; withoutVotes: number };
  samples: { total: number; byMethod: Record<string, number>; byReward: Record<string, number>; masked: number };
  deadLetters: { total: number; byStage: Record<string, number> };
  durationMs: number;
}

const sum = (xs: Iterable<number>) => [...xs].reduce((a, b) => a + b, 0);
const rangeSize = (r: TopicRange) => sum(Object.keys(r.start).map((p) => Number(BigInt(r.end[Number(p)]) - BigInt(r.start[Number(p)]))));

/** Runs `f` over `items` with at most `limit` calls in flight; results in order. */
async function mapLimit<T, R>(items: T[], limit: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The runtime's handler retry (core/retry.ts): a retriable failure is tried again with backoff, up to `attempts`. */
async function attempt<R>(
  f: () => Promise<R>,
  attempts: number,
  signal?: AbortSignal,
): Promise<{ value?: R; error?: unknown; attempts: number }> {
  let n = 0;
  try {
    const value = await retry(
      () => {
        n++;
        return f();
      },
      { attempts, baseMs: 200, maxMs: 5000, signal },
    );
    return { value, attempts: n };
  } catch (error) {
    return { error, attempts: Math.max(1, n) };
  }
}

class Interrupted extends Error {}

/** What became of one pair. */
interface Outcome {
  pair: TurnPair;
  judgement?: Judgement;
  sample?: Sample | null;
  failed?: { stage: 'judge' | 'sample-builder'; error: unknown; attempts: number };
}

export async function runReplay(o: ReplayOptions): Promise<ReplaySummary> {
  const t0 = Date.now();
  const prefix = o.prefix ?? '';
  const log = o.logger ?? createLogger('replay');
  if (!/^[A-Za-z0-9_-]+$/.test(o.tag)) throw new Error(`replay tag "${o.tag}" must be letters, digits, - or _`);
  const naming = { prefix, tag: o.tag };
  // Tagged topics, schemas and the transactional producer are set up while the range is read.
  const setup = (async () => {
    await ensureTopics(o.kafka, { naming, partitions: o.partitions });
    const codecs = await createEventCodecs({ registryUrl: o.registryUrl, naming });
    return codecs;
  })();
  setup.catch(() => undefined);
  const batchSize = o.batchSize ?? 2000;
  const concurrency = o.concurrency ?? 64;
  const judgeUntrainable = o.judgeUntrainable ?? true;
  const groupId = defaultGroupId('replay', naming);
  const topics = {
    pairs: topicName('pairs', naming),
    judgements: topicName('judgements', naming),
    samples: topicName('samples', naming),
    dlq: topicName('dlq', naming),
  };

  const admin = o.kafka.admin();
  await admin.connect();
  let txns: Transactions | undefined;
  let codecs!: EventCodecs;
  let committing: Promise<void> = Promise.resolve();
  try {
    const { plan, resumed } = await openPlan(admin, o.planFile, {
      prefix,
      tag: o.tag,
      turnsTopic: topicName('turns', naming),
      feedbackTopic: topicName('feedback', naming),
      from: o.from,
      to: o.to,
    });
    if (resumed) log.info({ tag: o.tag, plan: o.planFile }, 'resuming replay');
    const { turns, feedback } = plan;
    const committedT = await committedOffsets(admin, groupId, turns.topic);
    const committedF = await committedOffsets(admin, groupId, feedback.topic);
    await admin.disconnect();
    const bound = (r: TopicRange, p: number, side: 'start' | 'end') => (r[side][p] !== undefined ? BigInt(r[side][p]) : 0n);
    /** Where partition `p` of `r` stands: committed offsets at or past the range's end mean done. */
    const at = (r: TopicRange, c: Map<number, bigint>, p: number) => {
      const v = c.get(p) ?? -1n;
      const start = bound(r, p, 'start');
      return v < start ? start : v;
    };
    const partitions = [...new Set([...Object.keys(turns.start), ...Object.keys(feedback.start)].map(Number))].sort((a, b) => a - b);
    const isDone = (p: number) =>
      at(turns, committedT, p) >= bound(turns, p, 'end') && at(feedback, committedF, p) >= bound(feedback, p, 'end');
    const anyCommitted = [...committedT.values(), ...committedF.values()].some((v) => v >= 0n);
    const todo = partitions.filter((p) => !isDone(p));

    const inRange = { turns: rangeSize(turns), feedback: rangeSize(feedback) };
    const totalIn = inRange.turns + inRange.feedback;
    const tally = new OutputTally();
    const progress = {
      read:
        totalIn -
        sum(
          todo.map((p) =>
            Number(bound(turns, p, 'end') - bound(turns, p, 'start') + bound(feedback, p, 'end') - bound(feedback, p, 'start')),
          ),
        ),
      pairs: 0,
      judged: 0,
      built: 0,
    };
    const report = (finished: boolean) =>
      o.onProgress?.({
        stages: [
          { stage: 'session-assembler', consumed: progress.read, total: totalIn, done: finished },
          { stage: 'judge', consumed: progress.judged, total: progress.pairs, done: finished },
          { stage: 'sample-builder', consumed: progress.built, total: progress.judged, done: finished },
        ],
      });
    report(todo.length === 0);

    let interrupted = false;
    const aborted = () => o.signal?.aborted === true;
    try {
      if (aborted()) throw new Interrupted();
      if (todo.length > 0) {
        const producer = new Transactions({ kafka: o.kafka, transactionalId: groupId, logger: log });
        txns = producer;
        const ready = Promise.all([setup, producer.connect()]);
        ready.catch(() => undefined);
        const range = (r: TopicRange): TopicRange => ({
          topic: r.topic,
          start: Object.fromEntries(todo.filter((p) => r.start[p] !== undefined).map((p) => [p, r.start[p]])),
          end: Object.fromEntries(todo.filter((p) => r.end[p] !== undefined).map((p) => [p, r.end[p]])),
        });
        const records = await readRanges(o.kafka, [range(turns), range(feedback)], { signal: o.signal });
        codecs = (await ready)[0];
        for (const p of todo) {
          await replayPartition(p, records.get(turns.topic)?.get(p) ?? [], records.get(feedback.topic)?.get(p) ?? []);
          records.get(turns.topic)?.delete(p);
          records.get(feedback.topic)?.delete(p);
        }
        await committing;
      }
    } catch (err) {
      if (!(err instanceof Interrupted) && !aborted()) throw err;
      interrupted = true;
    }
    report(!interrupted);

    async function replayPartition(p: number, rawTurns: RawRecord[], rawFeedback: RawRecord[]): Promise<void> {
      const doneT = at(turns, committedT, p);
      const doneF = at(feedback, committedF, p);
      const dead: Array<{ key: string; dl: DeadLetter }> = [];
      const decode = async <K extends 'turns' | 'feedback'>(id: K, raw: RawRecord[], done: bigint): Promise<HistoryEvent[]> => {
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
      };
      const tEvents = await decode('turns', rawTurns, doneT);
      const fEvents = await decode('feedback', rawFeedback, doneF);
      const asm = new EventTimeAssembler({ ...o.assembler, tag: o.tag });
      let nextT = doneT;
      let nextF = doneF;
      let batch: TurnPair[] = [];
      let read = 0;
      let added = 0;
      for (const { event: e, pairs } of assemblePartition(asm, tEvents, fEvents, Date.now)) {
        if (!e) {
          for (const x of pairs) batch.push(x);
          break;
        }
        const old = e.offset < (e.topicId === 'turns' ? doneT : doneF);
        if (old) continue;
        if (batch.length >= batchSize) {
          await flush(p, batch, dead.splice(0), nextT, nextF, read);
          added += read;
          batch = [];
          read = 0;
        }
        read++;
        for (const x of pairs) batch.push(x);
        if (e.topicId === 'turns') nextT = e.offset + 1n;
        else nextF = e.offset + 1n;
      }
      const rest = Number(bound(turns, p, 'end') - bound(turns, p, 'start') + bound(feedback, p, 'end') - bound(feedback, p, 'start'));
      // The last transaction moves the position to the range's end: the partition is done.
      await flush(p, batch, dead.splice(0), bound(turns, p, 'end'), bound(feedback, p, 'end'), rest - added);
      const ig = asm.counts;
      if (ig.lostFeedback > 0 || Object.keys(ig.ignored).length > 0) log.debug({ partition: p, ...ig }, 'assembler left events out');
    }

    async function flush(
      p: number,
      pairs: TurnPair[],
      dead: Array<{ key: string; dl: DeadLetter }>,
      posT: bigint,
      posF: bigint,
      read: number,
    ): Promise<void> {
      const outcomes: Outcome[] = await mapLimit(pairs, concurrency, async (pair): Promise<Outcome> => {
        if (!judgeUntrainable && !isTrainable(pair.turn)) return { pair };
        const j = await attempt(() => o.judge.judge(pair, { signal: o.signal }), 5, o.signal);
        if (!j.value) return { pair, failed: { stage: 'judge', error: j.error, attempts: j.attempts } };
        const judgement = j.value;
        const b = await attempt(() => buildSample(judgement, o.samples ?? {}, { signal: o.signal }), 5, o.signal);
        if (!b.value) return { pair, judgement, failed: { stage: 'sample-builder', error: b.error, attempts: b.attempts } };
        return { pair, judgement, sample: b.value.sample };
      });
      if (aborted()) throw new Interrupted();
      const outputs: TransactionOutput[] = [];
      const encode = <K extends 'pairs' | 'judgements' | 'samples' | 'dlq'>(id: K, key: string, value: TopicValues[K]): Buffer => {
        const buf = codecs.of(id).encodeNow(value);
        outputs.push({ topic: topics[id], key, value: buf });
        return buf;
      };
      const tallied: Array<() => void> = [];
      for (const x of outcomes) {
        const { pair, judgement, sample, failed } = x;
        const pairValue = encode('pairs', pair.sessionId, pair);
        tallied.push(() => tally.pair(pair));
        let judgementValue: Buffer | undefined;
        if (judgement) {
          judgementValue = encode('judgements', judgement.turnId, judgement);
          tallied.push(() => tally.judgement(judgement));
        }
        if (sample) {
          encode('samples', sample.sessionId, sample);
          tallied.push(() => tally.sample(sample));
        }
        if (failed) {
          // As the runtime dead-letters an input it could not process; its position in the
          // tagged topic is not known before the transaction, hence partition -1.
          const [topic, key, value] =
            failed.stage === 'judge' ? [topics.pairs, pair.sessionId, pairValue] : [topics.judgements, judgement!.turnId, judgementValue!];
          dead.push({
            key,
            dl: deadLetter(
              { topic, partition: -1, offset: '-1', key: Buffer.from(key), value },
              failed.error,
              failed.stage,
              failed.attempts,
            ),
          });
        }
      }
      for (const d of dead) {
        encode('dlq', d.key, d.dl);
        tallied.push(() => tally.deadLetter(d.dl));
      }
      const offsets = {
        groupId,
        topics: [
          { topic: turns.topic, partitions: [{ partition: p, offset: posT.toString() }] },
          { topic: feedback.topic, partitions: [{ partition: p, offset: posF.toString() }] },
        ],
      };
      // Committed in order, one at a time, while the next batch is worked on.
      await committing;
      committing = txns!
        .commit(() => ({ outputs, offsets }), { signal: o.signal })
        .then(() => {
          for (const t of tallied) t();
          progress.read += read;
          progress.pairs += pairs.length;
          progress.judged += outcomes.filter((x) => x.judgement).length;
          progress.built += outcomes.filter((x) => x.judgement && !x.failed).length;
          log.debug({ partition: p, pairs: pairs.length, records: outputs.length }, 'replay transaction committed');
          report(false);
        });
      committing.catch(() => undefined);
    }

    // Whoever reads the tagged topics next (the summary below, a user, a learner) sees all of it.
    await txns?.awaitVisible();
    // A replay that continued an earlier run counts what the tagged topics hold; a fresh one what it wrote.
    const counts = anyCommitted ? await summarize(o.kafka, await setup) : tally.counts();
    log.info({ tag: o.tag, from: plan.from, to: plan.to, resumed, interrupted, ...counts, ms: Date.now() - t0 }, 'replay finished');
    return {
      tag: o.tag,
      from: plan.from,
      to: plan.to,
      resumed,
      interrupted,
      range: inRange,
      skippedPastEnd: 0,
      topics,
      ...counts,
      durationMs: Date.now() - t0,
    };
  } finally {
    await setup.catch(() => undefined);
    await committing.catch(() => undefined);
    await txns?.disconnect();
    await admin.disconnect().catch(() => undefined);
  }
}
