/**
 * The request `metadata` keys a gym rollout's calls carry (OpenAI's standard field, recorded in
 * the Turn): its task, group and index. A turn that has them is a step of a rollout: it is paired,
 * judged and analysed like any other, and trained only through its group (GRPO), never alone.
 */
export const ROLLOUT_METADATA = { task: 'gym_task', group: 'gym_group', rollout: 'gym_rollout' } as const;

/** Whether a turn (its `metadata`) is a step of a gym rollout. */
export const isRolloutStep = (metadata: Readonly<Record<string, string>> | undefined): boolean =>
  metadata !== undefined && metadata[ROLLOUT_METADATA.group] !== undefined;
