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
