/** The fault suite's result as a Markdown table (what docs/operations.md shows). */
import type { ChaosResult } from './run-chaos.ts';

const COLUMNS = [
  ['scenario', 'scenario'],
  ['answered', 'answered'],
  ['turns', 'turns'],
  ['distinct', 'distinct'],
  ['duplicates', 'dup'],
  ['pairs', 'pairs'],
  ['judgements', 'judged'],
  ['samples', 'samples'],
  ['clickhouse_rows', 'CH rows'],
  ['lost', 'lost'],
  ['doubled', 'doubled'],
  ['recover_s', 'recover s'],
  ['p99_after_fault_ms', 'p99 ms'],
] as const;

export function chaosTable(r: ChaosResult): string {
  const rows = r.scenarios.map((s) => COLUMNS.map(([k]) => String(s[k] ?? '—')));
  const head = `| ${COLUMNS.map(([, h]) => h).join(' | ')} |\n|${COLUMNS.map(() => '---').join('|')}|\n`;
  return head + rows.map((cells) => `| ${cells.join(' | ')} |`).join('\n') + '\n';
}
