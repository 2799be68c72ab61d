/** The runs ClickHouse holds: the live pipeline ('') and every replay tag, with their sizes. */
import type { AnalyticsStore } from '../../warehouse/index.ts';
import { int } from './scope.ts';

export interface RunSummary {
  /** Replay tag; '' = the live pipeline. */
  tag: string;
  pairs: number;
  judgements: number;
  samples: number;
}

/** Every run with rows, the live one first (listed even when empty), then replays by tag. */
export async function listRuns(store: AnalyticsStore): Promise<RunSummary[]> {
  const t = store.tables;
  const rows = await store.rows<{ tag: string; table: string; n: unknown }>(`
    SELECT replay_tag AS tag, 'pairs' AS table, count() AS n FROM ${t.pairs} FINAL GROUP BY replay_tag
    UNION ALL SELECT replay_tag AS tag, 'judgements' AS table, count() AS n FROM ${t.judgements} FINAL GROUP BY replay_tag
    UNION ALL SELECT replay_tag AS tag, 'samples' AS table, count() AS n FROM ${t.samples} FINAL GROUP BY replay_tag`);
  const runs = new Map<string, RunSummary>([['', { tag: '', pairs: 0, judgements: 0, samples: 0 }]]);
  for (const r of rows) {
    const run = runs.get(r.tag) ?? { tag: r.tag, pairs: 0, judgements: 0, samples: 0 };
    run[r.table as 'pairs' | 'judgements' | 'samples'] = int(r.n);
    runs.set(r.tag, run);
  }
  return [...runs.values()].sort((a, b) => (a.tag === '' ? -1 : b.tag === '' ? 1 : a.tag.localeCompare(b.tag)));
}
