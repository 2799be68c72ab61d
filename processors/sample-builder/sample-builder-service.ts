/**
 * The sample builder service: judgements → samples (keyed by session). Teacher calls (OPD) run in
 * the runtime's bounded pool; a teacher that fails retriably is retried with backoff by the
 * runtime, then the judgement goes to the DLQ with the reason. Without a teacher, a fetched batch
 * goes in one call.
 */
import type { Judgement, Sample } from '../../schemas/index.ts';
import type { ProcessorHandle } from '../../streams/index.ts';
import { counter } from '../../core/index.ts';
import { buildSample, type SampleBuilderOptions } from './build-sample.ts';
import { runStage } from '../run-stage.ts';
import type { ServiceOptions } from '../service-options.ts';

export interface SampleBuilderServiceOptions extends ServiceOptions, SampleBuilderOptions {}

const metrics = {
  samples: counter('turnstream_samples_total', 'Samples emitted', ['method', 'kind']),
  skipped: counter('turnstream_samples_skipped_total', 'Judgements that gave no sample', ['reason']),
};

export function startSampleBuilder(options: SampleBuilderServiceOptions): Promise<ProcessorHandle> {
  return runStage(options, {
    name: 'sample-builder',
    input: 'judgements',
    output: 'samples',
    // A teacher call per judgement: they run side by side in the pool. Without one, building is quick.
    batched: !options.teacher,
    async each(judgement: Judgement, signal, tally) {
      const { sample, skipped } = await buildSample(judgement, options, { signal });
      if (sample) tally.count(metrics.samples, { method: sample.method, kind: kindOf(sample) });
      else tally.count(metrics.skipped, { reason: skipped ?? 'unknown' });
      return sample ? { key: sample.sessionId, value: sample } : null;
    },
  });
}

function kindOf(sample: Sample): string {
  if (sample.lossMask.every((m) => m === 0)) return 'masked';
  if (sample.teacherLogprobs || sample.teacherPromptTokens) return sample.reward !== 0 ? 'both' : 'teacher';
  return 'reward';
}
