/**
 * The judge service: pairs → judgements (keyed by turnId). An LLM judge's pairs run in the
 * runtime's bounded pool (slow judges pause partitions, never the heartbeat), the votes of one pair
 * side by side; a local judge (the embedded one) takes a fetched batch per call.
 * A pair whose votes all failed throws `JUDGE_FAILED`, which the runtime sends to the DLQ with the
 * reason, so it is counted and can be re-judged by replay, never silently scored 0.
 */
import type { Judgement, TurnPair } from '../schemas/index.ts';
import { counter, histogram, runProcessor, type ProcessorHandle } from '../streams/index.ts';
import type { Judge } from './judge/index.ts';
import { isTrainable } from './session-assembler/index.ts';
import { defaultGroupId, type ServiceOptions } from './service-options.ts';

export interface JudgeServiceOptions extends ServiceOptions {
  /** The LLM judge or the embedded one. */
  judge: Judge;
  /**
   * Also judge pairs that can never become samples (the engine gave no token ids, or the response
   * is empty). They cost model calls and train nothing, so they are skipped (and counted).
   * @default false
   */
  judgeUntrainable?: boolean;
}

const metrics = {
  judged: counter('turnstream_judge_judgements_total', 'Judgements emitted', ['judge', 'score']),
  skipped: counter('turnstream_judge_skipped_total', 'Pairs not judged (untrainable)', ['judge']),
  votes: counter('turnstream_judge_votes_total', 'Judge votes by outcome', ['judge', 'outcome']),
  latency: histogram('turnstream_judge_pair_seconds', 'Time to judge one pair', ['judge'], [0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120]),
};

export function startJudge(options: JudgeServiceOptions): Promise<ProcessorHandle> {
  const { judge } = options;
  const latency = metrics.latency.labels({ judge: judge.id });
  /** The pair's judgement, or null when it is skipped; counted into `tally`, which goes to the metrics once the call succeeded. */
  const judgeOne = async (pair: TurnPair, signal: AbortSignal, tally: Map<string, number>): Promise<Judgement | null> => {
    const count = (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1);
    if (!options.judgeUntrainable && !isTrainable(pair.turn)) {
      count('skipped');
      return null;
    }
    const end = latency.startTimer();
    try {
      const j = await judge.judge(pair, { signal });
      for (const v of j.votes) count(`vote:${v.error ? 'failed' : v.score === null ? 'invalid' : String(v.score)}`);
      count(`score:${j.score}`);
      return j;
    } finally {
      end();
    }
  };
  // Metrics once per call (a batch's worth), not per pair: a labelled update costs about as much as the embedded judge.
  const record = (tally: Map<string, number>) => {
    for (const [key, n] of tally) {
      const [kind, value] = key.split(':') as [string, string | undefined];
      if (kind === 'skipped') metrics.skipped.inc({ judge: judge.id }, n);
      else if (kind === 'vote') metrics.votes.inc({ judge: judge.id, outcome: value! }, n);
      else metrics.judged.inc({ judge: judge.id, score: value! }, n);
    }
  };
  const common = {
    name: 'judge',
    kafka: options.kafka,
    codecs: options.codecs,
    groupId: options.groupId ?? defaultGroupId('judge', options.codecs.naming),
    instanceId: options.instanceId,
    concurrency: options.concurrency,
    sessionTimeoutMs: options.sessionTimeoutMs,
    logger: options.logger,
    inputs: ['pairs' as const],
  };
  if (judge.local) {
    return runProcessor({
      ...common,
      async handleBatch(records, ctx) {
        const tally = new Map<string, number>();
        for (const r of records) {
          const j = await judgeOne(r.value as TurnPair, ctx.signal, tally);
          if (j) ctx.emit('judgements', j.turnId, j);
        }
        record(tally);
      },
    });
  }
  // A model call per pair: pairs run side by side in the runtime's pool, each committed when it is done.
  return runProcessor({
    ...common,
    async handle(r, ctx) {
      const tally = new Map<string, number>();
      const j = await judgeOne(r.value as TurnPair, ctx.signal, tally);
      if (j) ctx.emit('judgements', j.turnId, j);
      record(tally);
    },
  });
}
