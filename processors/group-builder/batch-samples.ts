/**
 * A rollout batch's trajectories → the learner's samples, pure logic. Trajectories are grouped
 * (n rollouts of one task); a group short of its `groupSize` is dropped, a group whose rewards
 * are all equal is skipped (both reported); every step (model call) of every other trajectory
 * becomes one RL sample whose reward is the trajectory's advantage ("dynamic history": the
 * baseline is per trajectory, every step shares it). Every sample names its batch and how many
 * samples the batch has, so the learner takes one step on exactly them.
 */
import type { Sample, Trajectory } from '../../schemas/index.ts';
import { GROUP_BUILDER_DEFAULTS } from '../defaults.ts';
import { groupAdvantages } from './group-advantages.ts';

export interface BatchSampleOptions {
  /** Divide by the group's standard deviation (GRPO); off: r − mean. `GRPO_NORMALIZE_STD` @default true */
  normalizeStd?: boolean;
  /** The samples' `createdAt`. @default Date.now() */
  now?: number;
}

/** What became of a batch. */
export interface BatchReport {
  batchId: string;
  trajectories: number;
  groups: number;
  /** Groups trained on. */
  trained: number;
  /** Groups whose rewards were all equal. */
  skippedEqual: number;
  /** Groups missing rollouts when the batch was let go. */
  incomplete: number;
  /** Steps of trained trajectories that could not be samples (untokenized, empty). */
  untrainableSteps: number;
  samples: number;
}

export function batchSamples(
  batchId: string,
  trajectories: readonly Trajectory[],
  options: BatchSampleOptions = {},
): { samples: Sample[]; report: BatchReport } {
  const now = options.now ?? Date.now();
  const groups = new Map<string, Trajectory[]>();
  for (const t of trajectories) {
    const g = t.reward.rollout!.groupId;
    groups.set(g, [...(groups.get(g) ?? []), t]);
  }
  const report: BatchReport = {
    batchId,
    trajectories: trajectories.length,
    groups: groups.size,
    trained: 0,
    skippedEqual: 0,
    incomplete: 0,
    untrainableSteps: 0,
    samples: 0,
  };
  const samples: Sample[] = [];
  for (const [groupId, members] of [...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (members.length < members[0].reward.rollout!.groupSize) {
      report.incomplete++;
      continue;
    }
    const ordered = [...members].sort((a, b) => a.reward.rollout!.index - b.reward.rollout!.index);
    const adv = groupAdvantages(
      ordered.map((t) => t.reward.reward),
      options.normalizeStd ?? GROUP_BUILDER_DEFAULTS.normalizeStd,
    );
    if (!adv) {
      report.skippedEqual++;
      continue;
    }
    report.trained++;
    ordered.forEach((t, i) => {
      for (const step of t.steps) {
        const n = step.responseTokenIds.length;
        if (!step.tokenized || n === 0 || step.responseLogprobs.length !== n) {
          report.untrainableSteps++;
          continue;
        }
        samples.push({
          sampleId: `${step.turnId}:GRPO`,
          turnId: step.turnId,
          sessionId: t.sessionId,
          userId: t.userId,
          policyModelId: step.policyModelId,
          policyVersion: step.policyVersion,
          method: 'RL',
          tokens: [...step.promptTokenIds, ...step.responseTokenIds],
          promptLength: step.promptTokenIds.length,
          responseLength: n,
          lossMask: new Array<number>(n).fill(1),
          rolloutLogprobs: step.responseLogprobs,
          exactLogprobs: step.exactLogprobs,
          samplingTemperature: step.samplingTemperature ?? 1,
          samplingTopP: step.samplingTopP ?? 1,
          promptHeadTokens: step.promptHeadTokens ?? 0,
          reward: adv[i],
          teacherLogprobs: null,
          teacherTopK: null,
          teacherPromptTokens: null,
          weight: 1,
          judgeId: t.reward.source,
          createdAt: now,
          tag: t.tag,
          group: {
            batchId,
            batchSamples: 0,
            groupId,
            taskId: t.reward.rollout!.taskId,
            rolloutIndex: t.reward.rollout!.index,
            outcome: t.reward.reward,
            advantage: adv[i],
          },
        });
      }
    });
  }
  for (const s of samples) s.group!.batchSamples = samples.length;
  report.samples = samples.length;
  return { samples, report };
}
