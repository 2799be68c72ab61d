/** The terminal rendering of `turnstream report`: the funnel and the learning curve. */
import type { Overview } from './overview.ts';

const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number): string => (s.length >= n ? s : ' '.repeat(n - s.length) + s);
const fmt = (v: number | null, digits = 3): string => (v === null ? '—' : v.toFixed(digits));

/** A bar of `width` cells for value/max (eighth blocks for the fraction). */
export function bar(value: number, max: number, width: number): string {
  if (max <= 0 || value <= 0) return '';
  const cells = (value / max) * width;
  const full = Math.floor(cells);
  const eighths = Math.round((cells - full) * 8);
  return '█'.repeat(full) + (eighths > 0 ? '▏▎▍▌▋▊▉█'[eighths - 1] : '');
}

export function formatReport(o: Overview, width = 40): string {
  const lines: string[] = [];
  const f = o.funnel;
  const stages: Array<[string, number]> = [
    ['turns', f.turns],
    ['main', f.main],
    ['pairs', f.pairs],
    ['judged', f.judged],
    ['samples', f.samples],
    ['trained', f.trained],
  ];
  lines.push('Funnel');
  for (const [name, n] of stages) {
    const share = f.turns > 0 ? `${((100 * n) / f.turns).toFixed(1)}%` : '';
    lines.push(`  ${pad(name, 8)} ${lpad(String(n), 8)} ${lpad(share, 6)}  ${bar(n, f.turns, width)}`);
  }
  lines.push(`  (trainer reports ${f.trained_reported} samples consumed)`);
  lines.push('');
  lines.push('Learning curve: mean judge score per policy version (-1 … 1)');
  if (o.reward_by_version.length === 0) lines.push('  no judged turns yet');
  lines.push(`  ${pad('version', 8)} ${lpad('judged', 7)} ${lpad('score', 7)} ${lpad('reward', 7)} ${lpad('samples', 8)}`);
  for (const v of o.reward_by_version) {
    // Bars start at -1, so a score of -1 is empty and +1 is full width.
    const b = v.mean_score === null ? '' : bar(v.mean_score + 1, 2, width / 2);
    lines.push(
      `  ${pad(`v${v.policy_version}`, 8)} ${lpad(String(v.judged), 7)} ${lpad(fmt(v.mean_score), 7)} ${lpad(fmt(v.mean_reward), 7)} ${lpad(String(v.samples), 8)}  ${b}`,
    );
  }
  if (o.judges.length > 0) {
    lines.push('');
    lines.push('Judges');
    for (const j of o.judges) {
      lines.push(
        `  ${pad(j.judge_id, 16)} judgements ${j.judgements}  agreement ${fmt(j.agreement, 2)}  vote failures ${fmt(j.failure_rate, 2)}  p90 vote ${fmt(j.vote_latency_ms_p90, 0)} ms`,
      );
    }
  }
  const all = o.latency.find((l) => l.turn_type === 'ALL');
  if (all) {
    lines.push('');
    lines.push(`Latency (all turns): p50 ${fmt(all.p50, 0)} ms  p90 ${fmt(all.p90, 0)} ms  p99 ${fmt(all.p99, 0)} ms`);
  }
  if (o.dlq.length > 0) {
    lines.push('');
    lines.push('Dead letters');
    for (const d of o.dlq)
      lines.push(`  ${pad(d.stage, 18)} ${pad(d.code, 22)} ${lpad(String(d.count), 6)}  ${d.last_message.slice(0, 60)}`);
  }
  return lines.join('\n');
}
