/**
 * One replay transaction: a batch of pairs judged and built into samples, its outputs and dead
 * letters encoded, and the position reached in the range committed with them as the offsets of
 * the replay's group. Transactions commit in order, each while the next batch is judged.
 */
import type { TurnPair } from '../schemas/index.ts';
import { judgeBatch } from './judge-batch.ts';
import { encodeOutputs, type PendingDeadLetter } from './replay-outputs.ts';
import type { Position } from './replay-positions.ts';
import { aborted, Interrupted, type ReplayRun } from './replay-run.ts';

export interface ReplayBatch {
  partition: number;
  pairs: TurnPair[];
  dead: PendingDeadLetter[];
  /** The position in the range once the batch is committed. */
  position: Position;
  /** Records of the range the batch covers (for progress). */
  read: number;
}

/** Judges the batch, then commits it after the transaction before it. Resolves once its commit has started. */
export async function replayBatch(run: ReplayRun, b: ReplayBatch): Promise<void> {
  const { o, positions } = run;
  const outcomes = await judgeBatch(b.pairs, {
    judge: o.judge,
    samples: o.samples,
    concurrency: run.concurrency,
    judgeUntrainable: run.judgeUntrainable,
    signal: o.signal,
  });
  if (aborted(run)) throw new Interrupted();
  const { outputs, tally } = encodeOutputs(outcomes, b.dead, run.codecs, run.topics, run.tally);
  const p = b.partition;
  const offsets = {
    groupId: run.groupId,
    topics: [
      { topic: positions.plan.turns.topic, partitions: [{ partition: p, offset: b.position.turns.toString() }] },
      { topic: positions.plan.feedback.topic, partitions: [{ partition: p, offset: b.position.feedback.toString() }] },
    ],
  };
  await run.commits.next(() =>
    run.txns
      .commit(() => ({ outputs, offsets }), { signal: o.signal })
      .then(() => {
        tally();
        run.progress.add(
          b.read,
          b.pairs.length,
          outcomes.filter((x) => x.judgement).length,
          outcomes.filter((x) => x.judgement && !x.failed).length,
        );
        run.log.debug({ partition: p, pairs: b.pairs.length, records: outputs.length }, 'replay transaction committed');
        run.progress.report(false);
      }),
  );
}
