/** The analytics tables: one per event topic, plus the migrations ledger. */
import { identFragment } from './options.ts';

export type TableId = 'turns' | 'feedback' | 'pairs' | 'judgements' | 'samples' | 'weights' | 'dlq' | 'rewards';

export const TABLE_IDS: readonly TableId[] = ['turns', 'feedback', 'pairs', 'judgements', 'samples', 'weights', 'dlq', 'rewards'];

/** Fully qualified, back-quoted table names (`\`db\`.\`prefix_turns\``). */
export type Tables = Record<TableId | 'migrations', string>;

export function tableNames(database: string, prefix: string): Tables {
  const q = (name: string): string => `\`${database}\`.\`${identFragment(prefix)}${name}\``;
  return {
    turns: q('turns'),
    feedback: q('feedback'),
    pairs: q('pairs'),
    judgements: q('judgements'),
    samples: q('samples'),
    weights: q('weights'),
    dlq: q('dlq'),
    rewards: q('rewards'),
    migrations: q('schema_migrations'),
  };
}

/**
 * The tables a replay writes to, with their event id. Their rows carry `replay_tag` (the tag
 * of the topic the sink read them from; '' = live), and the ReplacingMergeTree key is
 * `(id, replay_tag)`: a replay re-derives the same ids (a pair's id is its turn's id), and a
 * replayed row must sit beside the live one, not replace it.
 */
export const REPLAY_KEYS: ReadonlyArray<readonly [TableId, string]> = [
  ['pairs', 'pair_id'],
  ['judgements', 'judgement_id'],
  ['samples', 'sample_id'],
  ['dlq', 'dlq_id'],
];
