/**
 * The group builder service: trajectories (keyed by rollout batch) → samples with group-relative
 * advantages (GRPO), the batch's samples in one transaction; per-batch state in a
 * changelog-backed store (`turnstream.batch-state.v1`). The work itself is group-builder/.
 */
import type { BatchState, Trajectory } from '../../schemas/index.ts';
import { runProcessor, type ProcessorHandle } from '../../streams/index.ts';
import { counter } from '../../core/index.ts';
import { BatchCore, type GroupBuilderOptions } from './batch-core.ts';
import { serviceRuntime, type ServiceOptions } from '../service-options.ts';

export interface GroupBuilderServiceOptions extends ServiceOptions, GroupBuilderOptions {
  /** How often batches that waited too long are looked for, ms. @default 1000 */
  punctuateMs?: number;
}

const metrics = {
  batches: counter('turnstream_grpo_batches_total', 'Rollout batches turned into samples', ['timed_out']),
  groups: counter('turnstream_grpo_groups_total', 'Rollout groups, by what became of them', ['outcome']),
  samples: counter('turnstream_grpo_samples_total', 'GRPO samples emitted'),
  ignored: counter('turnstream_grpo_ignored_total', 'Trajectories ignored (late, duplicate, not a rollout)', ['reason']),
};

export function startGroupBuilder(options: GroupBuilderServiceOptions): Promise<ProcessorHandle> {
  let log = options.logger;
  const core = new BatchCore(options, {
    batch: (r, timedOut) => {
      metrics.batches.inc({ timed_out: timedOut ? 'yes' : 'no' });
      metrics.groups.inc({ outcome: 'trained' }, r.trained);
      metrics.groups.inc({ outcome: 'all-equal' }, r.skippedEqual);
      metrics.groups.inc({ outcome: 'incomplete' }, r.incomplete);
      metrics.samples.inc(r.samples);
      log?.info({ ...r, timedOut }, 'rollout batch');
    },
    ignored: (reason) => metrics.ignored.inc({ reason }),
  });
  return runProcessor<BatchState>({
    ...serviceRuntime('group-builder', options),
    inputs: ['trajectories'],
    state: { topic: 'batchState' },
    async handleBatch(records, ctx) {
      log = ctx.logger;
      core.handle(
        records.map((r) => r.value as Trajectory),
        ctx.state,
        Date.now(),
        (s) => ctx.emit('samples', s.sessionId, s),
      );
    },
    punctuate: {
      intervalMs: options.punctuateMs ?? 1000,
      async run(ctx) {
        log = ctx.logger;
        core.punctuate(ctx.state, ctx.now, (s) => ctx.emit('samples', s.sessionId, s));
      },
    },
  });
}
