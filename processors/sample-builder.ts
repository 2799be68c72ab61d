/**
 * The sample builder service: judgements → samples (keyed by session). Teacher calls (OPD) run in
 * the runtime's bounded pool; a teacher that fails retriably is retried with backoff by the
 * runtime, then the judgement goes to the DLQ with the reason.
 */
import type { Judgement } from '../schemas/index.ts';
import { counter, runProcessor, type ProcessorHandle } from '../streams/index.ts';
import { buildSample, type SampleBuilderOptions } from './sample-builder/index.ts';
import { defaultGroupId, type ServiceOptions } from './service-options.ts';

export interface SampleBuilderServiceOptions extends ServiceOptions, SampleBuilderOptions {}

const metrics = {
  samples: counter('turnstream_samples_total', 'Samples emitted', ['method', 'kind']),
  skipped: counter('turnstream_samples_skipped_total', 'Judgements that gave no sample', ['reason']),
};

export function startSampleBuilder(options: SampleBuilderServiceOptions): Promise<ProcessorHandle> {
  return runProcessor({
    name: 'sample-builder',
    kafka: options.kafka,
    codecs: options.codecs,
    groupId: options.groupId ?? defaultGroupId('sample-builder', options.codecs.naming),
    instanceId: options.instanceId,
    concurrency: options.concurrency,
    sessionTimeoutMs: options.sessionTimeoutMs,
    logger: options.logger,
    inputs: ['judgements'],
    async handle(record, ctx) {
      const judgement = record.value as Judgement;
      const { sample, skipped } = await buildSample(judgement, options, { signal: ctx.signal });
      if (!sample) {
        metrics.skipped.inc({ reason: skipped ?? 'unknown' });
        return;
      }
      const kind = sample.lossMask.every((m) => m === 0)
        ? 'masked'
        : sample.teacherLogprobs || sample.teacherPromptTokens
          ? sample.reward !== 0
            ? 'both'
            : 'teacher'
          : 'reward';
      metrics.samples.inc({ method: sample.method, kind });
      ctx.emit('samples', sample.sessionId, sample);
    },
  });
}
