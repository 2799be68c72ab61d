/**
 * A replay transaction's records: each outcome's pair, judgement and sample, encoded for the
 * tagged topics, and the dead letters (records that could not be decoded, pairs the judge or
 * the sample builder kept failing on). What they add to the summary is counted once the
 * transaction commits.
 */
import type { DeadLetter } from '../schemas/index.ts';
import { deadLetter, type EventCodecs, type TopicValues, type TransactionOutput } from '../streams/index.ts';
import type { Outcome } from './judge-batch.ts';
import type { ReplayOutputTopics } from './replay-options.ts';
import type { OutputTally } from './summary.ts';

/** A dead letter waiting for its transaction, with its key. */
export interface PendingDeadLetter {
  key: string;
  dl: DeadLetter;
}

export interface EncodedOutputs {
  outputs: TransactionOutput[];
  /** Counts the outputs into the tally: call once they are committed. */
  tally(): void;
}

export function encodeOutputs(
  outcomes: Outcome[],
  dead: PendingDeadLetter[],
  codecs: EventCodecs,
  topics: ReplayOutputTopics,
  tally: OutputTally,
): EncodedOutputs {
  const outputs: TransactionOutput[] = [];
  const encode = <K extends 'pairs' | 'judgements' | 'samples' | 'dlq'>(id: K, key: string, value: TopicValues[K]): Buffer => {
    const buf = codecs.of(id).encodeNow(value);
    outputs.push({ topic: topics[id], key, value: buf });
    return buf;
  };
  const tallied: Array<() => void> = [];
  for (const { pair, judgement, sample, failed } of outcomes) {
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
        dl: deadLetter({ topic, partition: -1, offset: '-1', key: Buffer.from(key), value }, failed.error, failed.stage, failed.attempts),
      });
    }
  }
  for (const d of dead) {
    encode('dlq', d.key, d.dl);
    tallied.push(() => tally.deadLetter(d.dl));
  }
  return { outputs, tally: () => tallied.forEach((t) => t()) };
}
