/**
 * The judge service: pairs → judgements (keyed by turnId). Judging runs in the runtime's bounded
 * pool (slow judges pause partitions, never the heartbeat); the votes of one pair run concurrently.
 * A pair whose votes all failed throws `JUDGE_FAILED`, which the runtime sends to the DLQ with the
 * reason, so it is counted and can be re-judged by replay, never silently scored 0.
 */
import type { TurnPair } from '../schemas/index.ts';
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
  return runProcessor({
    name: 'judge',
    kafka: options.kafka,
    codecs: options.codecs,
    groupId: options.groupId ?? defaultGroupId('judge', options.codecs.naming),
    instanceId: options.instanceId,
    concurrency: options.concurrency,
    sessionTimeoutMs: options.sessionTimeoutMs,
    logger: options.logger,
    inputs: ['pairs'],
    async handle(record, ctx) {
      const pair = record.value as TurnPair;
      if (!options.judgeUntrainable && !isTrainable(pair.turn)) {
        metrics.skipped.inc({ judge: judge.id });
        return;
      }
      const end = metrics.latency.startTimer({ judge: judge.id });
      try {
        const j = await judge.judge(pair, { signal: ctx.signal });
        for (const v of j.votes)
          metrics.votes.inc({ judge: judge.id, outcome: v.error ? 'failed' : v.score === null ? 'invalid' : String(v.score) });
        metrics.judged.inc({ judge: judge.id, score: String(j.score) });
        ctx.emit('judgements', j.turnId, j);
      } finally {
        end();
      }
    },
  });
}
