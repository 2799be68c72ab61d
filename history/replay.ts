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
import { topicName } from '../schemas/index.ts';
import { defaultGroupId } from '../processors/index.ts';
import { createEventCodecs, ensureTopics, Transactions, type EventCodecs } from '../streams/index.ts';
import { createLogger, type Logger } from '../core/index.ts';
import { OrderedCommits } from './ordered-commits.ts';
import { readRanges } from './range-reader.ts';
import type { ReplayOptions, ReplayOutputTopics, ReplaySummary } from './replay-options.ts';
import { replayPartition } from './replay-partition.ts';
import { openPositions, type ReplayPositions } from './replay-positions.ts';
import { ReplayProgressCounter } from './replay-progress.ts';
import { aborted, Interrupted, type ReplayRun } from './replay-run.ts';
import { OutputTally, summarize } from './summary.ts';

export type { ReplayOptions, ReplayProgress, ReplaySummary, StageName, StageProgress } from './replay-options.ts';

type Naming = { prefix: string; tag: string };

/** The tagged topics and the codecs of the tagged family: set up while the range is read. */
function setUpOutputs(o: ReplayOptions, naming: Naming): Promise<EventCodecs> {
  const setup = (async () => {
    await ensureTopics(o.kafka, { naming, partitions: o.partitions });
    return createEventCodecs({ registryUrl: o.registryUrl, registrySecurity: o.registrySecurity, naming });
  })();
  setup.catch(() => undefined);
  return setup;
}

/** Reads what is left of the range, then replays it partition after partition; resolves once every transaction committed. */
async function replayRange(base: Omit<ReplayRun, 'codecs'>, setup: Promise<EventCodecs>): Promise<void> {
  const { o, positions } = base;
  const ready = Promise.all([setup, base.txns.connect()]);
  ready.catch(() => undefined);
  const { turns, feedback } = positions.plan;
  const records = await readRanges(o.kafka, [positions.left(turns), positions.left(feedback)], { signal: o.signal });
  const run: ReplayRun = { ...base, codecs: (await ready)[0] };
  for (const p of positions.todo) {
    await replayPartition(run, p, records.get(turns.topic)?.get(p) ?? [], records.get(feedback.topic)?.get(p) ?? []);
    records.get(turns.topic)?.delete(p);
    records.get(feedback.topic)?.delete(p);
  }
  await run.commits.settled();
}

/** What the tagged topics hold: counted from them when an earlier run wrote some, else as this run wrote them. */
async function replaySummary(
  o: ReplayOptions,
  log: Logger,
  s: { positions: ReplayPositions; resumed: boolean; interrupted: boolean; topics: ReplayOutputTopics; tally: OutputTally; t0: number },
  setup: Promise<EventCodecs>,
): Promise<ReplaySummary> {
  const { plan, anyCommitted, inRange } = s.positions;
  const { resumed, interrupted } = s;
  const counts = anyCommitted ? await summarize(o.kafka, await setup) : s.tally.counts();
  log.info({ tag: o.tag, from: plan.from, to: plan.to, resumed, interrupted, ...counts, ms: Date.now() - s.t0 }, 'replay finished');
  return {
    tag: o.tag,
    from: plan.from,
    to: plan.to,
    resumed,
    interrupted,
    range: inRange,
    skippedPastEnd: 0,
    topics: s.topics,
    ...counts,
    durationMs: Date.now() - s.t0,
  };
}

export async function runReplay(o: ReplayOptions): Promise<ReplaySummary> {
  const t0 = Date.now();
  const prefix = o.prefix ?? '';
  const log = o.logger ?? createLogger('replay');
  if (!/^[A-Za-z0-9_-]+$/.test(o.tag)) throw new Error(`replay tag "${o.tag}" must be letters, digits, - or _`);
  const naming = { prefix, tag: o.tag };
  // Tagged topics, schemas and the transactional producer are set up while the range is read.
  const setup = setUpOutputs(o, naming);
  const groupId = defaultGroupId('replay', naming);
  const topics: ReplayOutputTopics = {
    pairs: topicName('pairs', naming),
    judgements: topicName('judgements', naming),
    samples: topicName('samples', naming),
    dlq: topicName('dlq', naming),
  };
  const admin = o.kafka.admin();
  await admin.connect();
  let txns: Transactions | undefined;
  const commits = new OrderedCommits();
  try {
    const { positions, resumed } = await openPositions(admin, o.planFile, groupId, {
      prefix,
      tag: o.tag,
      turnsTopic: topicName('turns', naming),
      feedbackTopic: topicName('feedback', naming),
      from: o.from,
      to: o.to,
    });
    if (resumed) log.info({ tag: o.tag, plan: o.planFile }, 'resuming replay');
    await admin.disconnect();
    const { inRange, todo } = positions;
    const progress = new ReplayProgressCounter(inRange.turns + inRange.feedback, positions.alreadyRead(), o.onProgress);
    const tally = new OutputTally();
    progress.report(todo.length === 0);
    let interrupted = false;
    try {
      if (aborted({ o })) throw new Interrupted();
      if (todo.length > 0) {
        txns = new Transactions({ kafka: o.kafka, transactionalId: groupId, logger: log });
        const [batchSize, concurrency, judgeUntrainable] = [o.batchSize ?? 2000, o.concurrency ?? 64, o.judgeUntrainable ?? true];
        const run = { o, log, topics, groupId, positions, progress, tally, txns, commits, batchSize, concurrency, judgeUntrainable };
        await replayRange(run, setup);
      }
    } catch (err) {
      if (!(err instanceof Interrupted) && !aborted({ o })) throw err;
      interrupted = true;
    }
    progress.report(!interrupted);
    // Whoever reads the tagged topics next (the summary, a user, a learner) sees all of it.
    await txns?.awaitVisible();
    return await replaySummary(o, log, { positions, resumed, interrupted, topics, tally, t0 }, setup);
  } finally {
    await setup.catch(() => undefined);
    await commits.settled().catch(() => undefined);
    await txns?.disconnect();
    await admin.disconnect().catch(() => undefined);
  }
}
