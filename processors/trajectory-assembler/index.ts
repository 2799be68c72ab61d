export {
  TrajectoryCore,
  stepOf,
  DEFAULT_SETTLE_MS,
  type TrajectoryAssemblerOptions,
  type TrajectoryEvents,
  type TrajectoryRecord,
} from './trajectory-core.ts';
export { startTrajectoryAssembler, type TrajectoryAssemblerServiceOptions } from './trajectory-assembler-service.ts';
