/**
 * The judge service: pairs → judgements (keyed by turnId). An LLM judge's pairs run in the
 * runtime's bounded pool (slow judges pause partitions, never the heartbeat), the votes of one pair
 * side by side; a local judge (the embedded one) takes a fetched batch per call.
 * A pair whose votes all failed throws `JUDGE_FAILED`, which the runtime sends to the DLQ with the
 * reason, so it is counted and can be re-judged by replay, never silently scored 0.
 */
import type { TurnPair } from '../../schemas/index.ts';
import type { ProcessorHandle } from '../../streams/index.ts';
import { counter, histogram } from '../../core/index.ts';
import type { Judge } from './judge.ts';
import { isTrainable } from '../session-assembler/index.ts';
import { runStage } from '../run-stage.ts';
import type { ServiceOptions } from '../service-options.ts';

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
  return runStage(options, {
    name: 'judge',
    input: 'pairs',
    output: 'judgements',
    // An LLM judge's pairs run side by side in the pool, each committed when it is done.
    batched: judge.local === true,
    async each(pair: TurnPair, signal, tally) {
      if (!options.judgeUntrainable && !isTrainable(pair.turn)) {
        tally.count(metrics.skipped, { judge: judge.id });
        return null;
      }
      const end = latency.startTimer();
      try {
        const j = await judge.judge(pair, { signal });
        for (const v of j.votes)
          tally.count(metrics.votes, { judge: judge.id, outcome: v.error ? 'failed' : v.score === null ? 'invalid' : String(v.score) });
        tally.count(metrics.judged, { judge: judge.id, score: String(j.score) });
        return { key: j.turnId, value: j };
      } finally {
        end();
      }
    },
  });
}
