/**
 * What `turnstream eval` prints on stdout: one JSON object with `--json`, else a few lines for
 * people. Progress and logs go to stderr, so stdout carries only this.
 */
import type { MultiUserEvalResult } from './multi-user.ts';
import { stability, toResultJson, type WrittenReports } from './report.ts';
import type { EvalResult } from './run-eval.ts';

/** `--users`: the summary, each run with its number of conflicts instead of the list (and without its users). */
export function usersOutput(res: MultiUserEvalResult, json: boolean | undefined, file: string): string {
  if (json) {
    const { runs, ...summary } = res;
    return (
      JSON.stringify({
        ...summary,
        runs: runs.map(({ users: _users, conflicts, ...r }) => ({ ...r, conflicts: conflicts.length })),
      }) + '\n'
    );
  }
  const b = res.baseline_no_consensus;
  return (
    `${res.users} users (${res.persona}: "${res.preference}") + ${res.adversaries} adversary, ${res.interactions} interactions each, ${res.seeds} seeds\n` +
    `consensus on : held-out ${res.before.toFixed(3)} → ${res.after.toFixed(3)}, adversary share ${res.adversary_share.toFixed(3)} (cap ${res.maxUserShare}), weight ${res.adversary_weight.toFixed(3)} (others ${res.others_weight.toFixed(3)}), loss-weight share ${res.adversary_weight_share.toFixed(3)}\n` +
    `consensus off: held-out ${b.before.toFixed(3)} → ${b.after.toFixed(3)}, adversary share ${b.adversary_share.toFixed(3)}, weight ${b.adversary_weight.toFixed(3)}, loss-weight share ${b.adversary_weight_share.toFixed(3)}\n` +
    `wrote ${file} (${Math.round(res.seconds)} s)\n`
  );
}

/** How many runs ended more than one eval step's noise below their own peak, and which; the curve's count beside it where peaks were measured again. */
function stabilityLine(result: EvalResult): string {
  const st = stability(result);
  const below = st.runs
    .filter((x) => x.endsBelowPeak)
    .map((x) => `${x.persona}-seed${x.seed} ${x.peak.toFixed(2)} → ${x.final.toFixed(2)}`);
  const again = st.runs.filter((x) => x.measuredAgain > 0);
  const how = again.length
    ? ` (peak and last measured again on ${again[0].measuredAgain} fresh replies each in the ${again.length} runs whose last score was below their peak; on the curve alone ${st.curveEndsBelowPeak})`
    : '';
  return `runs ending more than one eval step's noise below their own peak: ${st.endsBelowPeak} of ${st.runs.length}${how}${below.length ? `: ${below.join(', ')}` : ''}\n`;
}

/** The personas' result: the summary with each run's scores, or the before/after, the test and each version's scores. */
export function evalOutput(result: EvalResult, written: WrittenReports, json: boolean | undefined): string {
  if (json) {
    const { runs, ...summary } = toResultJson(result);
    return (
      JSON.stringify({
        ...summary,
        runs: runs.map((r) => ({
          persona: r.persona,
          seed: r.seed,
          scores: r.scores.map((s) => s.satisfaction),
          answered: r.scores.map((s) => s.answered),
          trainSatisfaction: r.trainSatisfaction,
          samples: r.samples,
        })),
      }) + '\n'
    );
  }
  return (
    `held-out satisfaction ${result.before.toFixed(3)} → ${result.after.toFixed(3)} over ${result.personas} personas × ${result.seeds} seeds, ${result.interactions} interactions each (${result.method}, ${result.mode})\n` +
    `held-out replies that answer the prompt at all: ${result.answered.before.toFixed(3)} → ${result.answered.after.toFixed(3)}\n` +
    `${result.statistic.test}: mean diff ${result.statistic.meanDiff.toFixed(3)}, t = ${result.statistic.t.toFixed(2)}, p = ${result.statistic.p.toPrecision(3)} (n = ${result.statistic.n})\n` +
    stabilityLine(result) +
    result.per_version
      .map(
        (v) =>
          `  v${v.version} (${v.interactions} interactions): ${v.satisfaction.toFixed(3)}  ${Object.entries(v.byPersona)
            .map(([k, x]) => `${k} ${x.toFixed(2)}`)
            .join('  ')}`,
      )
      .join('\n') +
    `\nwrote ${written.csv}, eval.json, eval.svg, ${written.svg.length - 1} persona curves${written.png.length ? ' (SVG and PNG)' : ''} (${Math.round(result.seconds)} s)\n`
  );
}
