/**
 * `turnstream gym --merge`: seeds run apart (`--seed k`, at different times or on different
 * machines) joined into one report, as if they had run together. The runs must be of the same
 * thing (suite, model, agent, splits, step shape, settings, learner) and hold different seeds;
 * every figure is recomputed over all the (seed, task) pairs, so the paired test sees them all.
 * The wall clock is the sum of the runs' own, each kept in `merged`.
 */
import { invalidInput } from '../../core/index.ts';
import { summarize, type GymResult, type RunIdentity } from './run-gym.ts';

/** One run to join, and where it came from (named in errors and in the merged report). */
export interface MergeSource {
  source: string;
  result: GymResult;
}

/** Why two values differ, as a path (`settings.lr: 0.001 vs 0.002`), or null when they are equal. */
function difference(a: unknown, b: unknown, path: string): string | null {
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && Array.isArray(a) === Array.isArray(b)) {
    // In the order the identity lists them (suite, agent, model, …): the first difference named is the one that matters most.
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const k of keys) {
      const d = difference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], path ? `${path}.${k}` : k);
      if (d) return d;
    }
    return null;
  }
  return Object.is(a, b) ? null : `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}

const identityOf = (r: GymResult): RunIdentity & Pick<GymResult, 'tasks' | 'learner'> => ({
  suite: r.suite,
  agent: r.agent,
  model: r.model,
  n: r.n,
  batch: r.batch,
  settings: r.settings,
  tasks: r.tasks,
  learner: r.learner,
});

function checkShape(x: MergeSource): void {
  const r = x.result as Partial<GymResult> | null;
  const runsOk =
    Array.isArray(r?.runs) &&
    r.runs.length > 0 &&
    r.runs.every((x) => Number.isInteger(x?.seed) && Array.isArray(x.evals) && Array.isArray(x.steps) && typeof x.time === 'object');
  if (typeof r !== 'object' || r === null || !runsOk || typeof r.settings !== 'object' || !r.tasks || typeof r.wall_s !== 'number')
    throw invalidInput(`--merge: ${x.source} is not a gym report (gym.json with its runs)`, '--merge');
  if (r.merged) throw invalidInput(`--merge: ${x.source} is itself a merged report; merge the runs it was made of`, '--merge');
}

/** The runs joined into one result (see the module comment); refused, naming the field, when they are not of the same thing. */
export function mergeGymResults(sources: MergeSource[]): GymResult {
  if (sources.length < 2) throw invalidInput('--merge needs at least two gym reports', '--merge');
  sources.forEach(checkShape);
  const [first, ...rest] = sources;
  for (const x of rest) {
    const d = difference(identityOf(first.result), identityOf(x.result), '');
    if (d) throw invalidInput(`--merge: ${x.source} is not a run of the same thing as ${first.source} (${d})`, '--merge');
  }
  const owner = new Map<number, string>();
  for (const x of sources)
    for (const run of x.result.runs) {
      const other = owner.get(run.seed);
      if (other) throw invalidInput(`--merge: seed ${run.seed} is in both ${other} and ${x.source}`, '--merge');
      owner.set(run.seed, x.source);
    }
  const runs = sources.flatMap((x) => x.result.runs).sort((a, b) => a.seed - b.seed);
  const wall = sources.reduce((a, x) => a + x.result.wall_s, 0);
  return {
    topicPrefix: first.result.topicPrefix,
    ...summarize(runs, identityOf(first.result), first.result.tasks, wall),
    ...(first.result.learner ? { learner: first.result.learner } : {}),
    merged: sources.map((x) => ({
      source: x.source,
      topicPrefix: x.result.topicPrefix,
      seeds: x.result.runs.map((r) => r.seed),
      wall_s: x.result.wall_s,
    })),
  };
}
