/**
 * The replay as the live pipeline runs it (what `turnstream replay` did before it became a batch
 * job, see replay.ts): the three stream processors, under consumer groups of their own
 * (`turnstream.<service>.<tag>`), into the tagged topics. Kept as the reference the batch replay's
 * outputs are compared with (test/integration/history/batch-vs-streaming.test.ts).
 *
 * The three stages run at once, as in the live pipeline, and are stopped one after the other as
 * each catches up with the range:
 *
 * 1. session assembler: its group starts at the range's start (set before it joins); it is done
 *    when its committed offsets reach the range's end on the turns and feedback topics. It then
 *    runs a little longer (quiet + expiry interval) so that sessions left open at the end of the
 *    history are closed by the idle timeout and pairs held for the feedback grace period are
 *    released (history is older than both, and a caught-up
 *    assembler's clock is the wall clock), and is stopped, which finishes and commits its work.
 * 2. judge: done when it has consumed the (now final) tagged pairs topic to its end.
 * 3. sample builder: likewise on the tagged judgements topic.
 *
 * `--to` is exact: the assembler's consumer drops records at or after the range's end before the
 * runtime sees them (see bounded-kafka.ts), and pauses the partition.
 *
 * Resuming: the resolved range is kept in a plan file; running the same replay again (same tag)
 * reuses it and the groups continue from their committed offsets.
 */
import type { Admin } from 'kafkajs';
import type { ReplayOptions, ReplaySummary, StageName, StageProgress } from './replay.ts';
import { summarize } from './summary.ts';
import { defaultGroupId, startJudge, startSampleBuilder, startSessionAssembler } from '../processors/index.ts';
import type { TopicId } from '../schemas/index.ts';
import { createEventCodecs, createLogger, ensureTopics, type EventCodecs, type ProcessorHandle } from '../streams/index.ts';
import { boundedKafka } from './bounded-kafka.ts';
import { committedOffsets, openPlan, seedGroup, type TopicRange } from './replay-range.ts';

const sum = (xs: Iterable<number>) => [...xs].reduce((a, b) => a + b, 0);

interface StageRun {
  name: StageName;
  groupId: string;
  handle: ProcessorHandle;
  /** Input ranges; for downstream stages known once the upstream stage has stopped. */
  ranges: TopicRange[] | null;
  inputTopic: string;
  done: boolean;
  lastConsumed: number;
  lastChangeAt: number;
  reachedAt: number | null;
}

async function highs(admin: Admin, topic: string): Promise<Record<number, string>> {
  const out: Record<number, string> = {};
  for (const o of await admin.fetchTopicOffsets(topic)) out[o.partition] = o.high;
  return out;
}

async function progressOf(
  admin: Admin,
  s: StageRun,
): Promise<{ consumed: number; total: number; reached: (tolerance: boolean) => boolean }> {
  if (!s.ranges) {
    // Upstream still running: show the input as it grows.
    const h = await highs(admin, s.inputTopic);
    const c = await committedOffsets(admin, s.groupId, s.inputTopic);
    const consumed = sum(Object.entries(h).map(([p, hi]) => Math.min(Number(hi), Math.max(0, Number(c.get(Number(p)) ?? -1n)))));
    return { consumed, total: sum(Object.values(h).map(Number)), reached: () => false };
  }
  let consumed = 0;
  let total = 0;
  const perPartition: Array<{ c: bigint; end: bigint }> = [];
  for (const r of s.ranges) {
    const c = await committedOffsets(admin, s.groupId, r.topic);
    for (const [ps, startS] of Object.entries(r.start)) {
      const p = Number(ps);
      const start = BigInt(startS);
      const end = BigInt(r.end[p]);
      const committed = c.get(p) ?? -1n;
      const at = committed < 0n ? start : committed;
      consumed += Number((at < start ? start : at > end ? end : at) - start);
      total += Number(end - start);
      perPartition.push({ c: at, end });
    }
  }
  // Tolerance: the last entry of a partition may be a transaction marker, never delivered.
  const reached = (tolerance: boolean) => perPartition.every(({ c, end }) => c >= end || (tolerance && c >= end - 1n));
  return { consumed, total, reached };
}

export async function runStreamingReplay(o: ReplayOptions): Promise<ReplaySummary> {
  const t0 = Date.now();
  const prefix = o.prefix ?? '';
  const log = o.logger ?? createLogger('replay');
  if (!/^[A-Za-z0-9_-]+$/.test(o.tag)) throw new Error(`replay tag "${o.tag}" must be letters, digits, - or _`);
  const naming = { prefix, tag: o.tag };
  await ensureTopics(o.kafka, { naming, partitions: o.partitions });
  const codecs: EventCodecs = await createEventCodecs({ registryUrl: o.registryUrl, naming });
  const pollMs = o.pollMs ?? 250;
  const settleMs = o.settleMs ?? 1500;
  const quietMs = Math.max(500, settleMs);
  const expireIntervalMs = 250;

  const admin = o.kafka.admin();
  await admin.connect();
  const handles: ProcessorHandle[] = [];
  try {
    const { plan, resumed } = await openPlan(admin, o.planFile, {
      prefix,
      tag: o.tag,
      turnsTopic: codecs.topic('turns'),
      feedbackTopic: codecs.topic('feedback'),
      from: o.from,
      to: o.to,
    });
    if (resumed) log.info({ tag: o.tag, plan: o.planFile }, 'resuming replay');
    const assemblerGroup = defaultGroupId('session-assembler', naming);
    await seedGroup(admin, assemblerGroup, [plan.turns, plan.feedback]);

    const common = { kafka: o.kafka, codecs, concurrency: o.concurrency };
    const child = (name: string) => log.child({ stage: name });
    const ends = new Map<string, Map<number, bigint>>();
    for (const r of [plan.turns, plan.feedback]) ends.set(r.topic, new Map(Object.entries(r.end).map(([p, e]) => [Number(p), BigInt(e)])));
    const bounded = boundedKafka(o.kafka, ends);
    const assembler = await startSessionAssembler({
      ...common,
      kafka: bounded.kafka,
      logger: child('session-assembler'),
      idleTimeoutMs: o.assembler?.idleTimeoutMs,
      endPolicy: o.assembler?.endPolicy,
      feedbackGraceMs: o.assembler?.feedbackGraceMs,
      tag: o.tag,
      quietMs,
      expireIntervalMs,
      releaseIntervalMs: expireIntervalMs,
      // Never forget closed sessions during a replay: history is older than any retention, and
      // the live service's clean-up (a day after a session's last activity) would run in the same
      // tick that releases its last held pairs, which are then lost (reported to its owner).
      closedRetentionMs: Number.MAX_SAFE_INTEGER,
    });
    handles.push(assembler);
    const judge = await startJudge({ ...common, logger: child('judge'), judge: o.judge, judgeUntrainable: o.judgeUntrainable ?? true });
    handles.push(judge);
    const builder = await startSampleBuilder({ ...common, logger: child('sample-builder'), ...o.samples });
    handles.push(builder);
    await Promise.all(handles.map((h) => h.ready));

    const now = Date.now();
    const stages: StageRun[] = [
      {
        name: 'session-assembler',
        groupId: assemblerGroup,
        handle: assembler,
        ranges: [plan.turns, plan.feedback],
        inputTopic: plan.turns.topic,
        done: false,
        lastConsumed: -1,
        lastChangeAt: now,
        reachedAt: null,
      },
      {
        name: 'judge',
        groupId: defaultGroupId('judge', naming),
        handle: judge,
        ranges: null,
        inputTopic: codecs.topic('pairs'),
        done: false,
        lastConsumed: -1,
        lastChangeAt: now,
        reachedAt: null,
      },
      {
        name: 'sample-builder',
        groupId: defaultGroupId('sample-builder', naming),
        handle: builder,
        ranges: null,
        inputTopic: codecs.topic('judgements'),
        done: false,
        lastConsumed: -1,
        lastChangeAt: now,
        reachedAt: null,
      },
    ];
    const outputOf: Record<StageName, TopicId> = { 'session-assembler': 'pairs', judge: 'judgements', 'sample-builder': 'samples' };
    let skippedPastEnd = 0;
    let interrupted = false;
    // A stage that dies (fatal Kafka error) ends the replay with its error; a clean stop does not.
    const failed = Promise.race(handles.map((h) => h.closed.then(() => new Promise<never>(() => undefined))));
    failed.catch(() => undefined);
    const pause = () => Promise.race([failed, new Promise<void>((r) => setTimeout(r, pollMs))]);

    for (;;) {
      if (o.signal?.aborted) {
        interrupted = true;
        break;
      }
      const report: StageProgress[] = [];
      for (let i = 0; i < stages.length; i++) {
        const s = stages[i];
        const p = await progressOf(admin, s);
        if (s.done) {
          report.push({ stage: s.name, consumed: p.total, total: p.total, done: true });
          continue;
        }
        const stats = s.handle.stats();
        const t = Date.now();
        if (stats.consumed !== s.lastConsumed) {
          s.lastConsumed = stats.consumed;
          s.lastChangeAt = t;
        }
        const quiet = t - s.lastChangeAt >= settleMs && stats.inFlight === 0;
        const upstreamDone = i === 0 || stages[i - 1].done;
        if (upstreamDone && s.ranges && p.reached(quiet || i > 0)) {
          s.reachedAt ??= t;
          // The assembler lingers so the idle timeout can close the sessions the history left open.
          const linger = i === 0 ? quietMs + 3 * expireIntervalMs + settleMs : 0;
          if (t - s.reachedAt >= linger && (i === 0 || stats.inFlight === 0)) {
            await s.handle.stop(600_000);
            s.done = true;
            if (i === 0) skippedPastEnd = bounded.skipped();
            log.info({ stage: s.name, ms: t - t0 }, 'stage caught up with the range; stopped');
            const next = stages[i + 1];
            if (next) {
              const out = codecs.topic(outputOf[s.name]);
              const end = await highs(admin, out);
              const start: Record<number, string> = {};
              for (const lo of await admin.fetchTopicOffsets(out)) start[lo.partition] = lo.low;
              next.ranges = [{ topic: out, start, end }];
            }
          }
        }
        report.push({ stage: s.name, consumed: s.done ? p.total : p.consumed, total: p.total, done: s.done });
      }
      o.onProgress?.({ stages: report });
      if (stages.every((s) => s.done)) break;
      await pause();
    }
    if (interrupted) await Promise.all(handles.map((h) => h.stop().catch(() => undefined)));

    const summary = await summarize(o.kafka, codecs);
    return {
      tag: o.tag,
      from: plan.from,
      to: plan.to,
      resumed,
      interrupted,
      range: {
        turns: sum(
          Object.keys(plan.turns.start).map((p) => Number(BigInt(plan.turns.end[Number(p)]) - BigInt(plan.turns.start[Number(p)]))),
        ),
        feedback: sum(
          Object.keys(plan.feedback.start).map((p) =>
            Number(BigInt(plan.feedback.end[Number(p)]) - BigInt(plan.feedback.start[Number(p)])),
          ),
        ),
      },
      skippedPastEnd,
      topics: {
        pairs: codecs.topic('pairs'),
        judgements: codecs.topic('judgements'),
        samples: codecs.topic('samples'),
        dlq: codecs.topic('dlq'),
      },
      ...summary,
      durationMs: Date.now() - t0,
    };
  } catch (err) {
    await Promise.all(handles.map((h) => h.stop(10_000).catch(() => undefined)));
    throw err;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
