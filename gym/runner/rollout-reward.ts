/** A rollout's verdict as the Reward event the pipeline trains from (and analytics read). */
import { deterministicId, type Reward, type RolloutInfo } from '../../schemas/index.ts';
import type { RolloutResult } from '../agent/rollout-types.ts';
import { trainingReward, type GymReward } from './gym-options.ts';

export function rolloutReward(
  r: RolloutResult,
  rollout: RolloutInfo,
  served: { userId: string | null; policyModelId: string | null },
  now = Date.now(),
  reward: GymReward = 'pass',
): Reward {
  const source = `verifier:${r.verdict.kind}`;
  return {
    // The same for the same session and source: a re-sent outcome dedupes.
    rewardId: deterministicId('reward', r.sessionId, source),
    sessionId: r.sessionId,
    userId: served.userId,
    source,
    reward: trainingReward(r.verdict, reward),
    passed: r.verdict.passed,
    detail:
      (r.error ? `${r.stoppedBy}: ${r.error}; ` : r.stoppedBy !== 'answer' ? `${r.stoppedBy}; ` : '') + r.verdict.detail.slice(0, 2000),
    turnIds: r.turnIds,
    policyModelId: served.policyModelId,
    policyVersion: r.policyVersions.find((v) => v >= 0) ?? null,
    rollout,
    createdAt: now,
    parts: r.verdict.parts,
  };
}
