/**
 * The trajectory assembler service: turns + rewards (both keyed by session) → trajectories keyed
 * by rollout batch, with per-session state in a changelog-backed store
 * (`turnstream.trajectory-state.v1`). The work itself is trajectory-assembler/trajectory-core.ts.
 */
import type { TrajectoryState } from '../../schemas/index.ts';
import { runProcessor, type ProcessorHandle } from '../../streams/index.ts';
import { counter } from '../../core/index.ts';
import { TrajectoryCore, type TrajectoryAssemblerOptions, type TrajectoryRecord } from './trajectory-core.ts';
import { serviceRuntime, type ServiceOptions } from '../service-options.ts';

export interface TrajectoryAssemblerServiceOptions extends ServiceOptions, TrajectoryAssemblerOptions {
  /** How often waiting outcomes and old state are looked at, ms. @default 1000 */
  punctuateMs?: number;
}

const metrics = {
  trajectories: counter('turnstream_trajectories_total', 'Rollout trajectories emitted', ['complete']),
  ignored: counter('turnstream_trajectory_ignored_total', 'Turns and outcomes ignored (late, duplicate, not a rollout)', [
    'kind',
    'reason',
  ]),
  abandoned: counter('turnstream_trajectory_abandoned_total', 'Rollouts forgotten without an outcome'),
};

export function startTrajectoryAssembler(options: TrajectoryAssemblerServiceOptions): Promise<ProcessorHandle> {
  const core = new TrajectoryCore(options, {
    emitted: (t) => metrics.trajectories.inc({ complete: t.missingTurns === 0 ? 'yes' : 'no' }),
    ignored: (kind, reason) => metrics.ignored.inc({ kind, reason }),
    abandoned: () => metrics.abandoned.inc(),
  });
  return runProcessor<TrajectoryState>({
    ...serviceRuntime('trajectory-assembler', options),
    inputs: ['turns', 'rewards'],
    state: { topic: 'trajectoryState' },
    async handleBatch(records, ctx) {
      core.handle(records as unknown as TrajectoryRecord[], ctx.state, Date.now(), (t) =>
        ctx.emit('trajectories', t.reward.rollout!.batchId, t),
      );
    },
    punctuate: {
      intervalMs: options.punctuateMs ?? 1000,
      async run(ctx) {
        core.punctuate(ctx.state, ctx.now, (t) => ctx.emit('trajectories', t.reward.rollout!.batchId, t));
      },
    },
  });
}
