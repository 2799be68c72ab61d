/**
 * One scenario of `turnstream chaos`: conversations under load with the fault injected a third of
 * the way in (bench/chaos/fault-window.ts), then a wait until every answered turn went all the way
 * (or the time is up), and the counts of what was lost or doubled (bench/chaos/tally.ts).
 */
import { quantile } from '../support.ts';
import { FaultWindow } from './fault-window.ts';
import { runConversations, type CallResult } from './load.ts';
import type { Observer } from './observe.ts';
import type { FaultContext, FaultDetails, Scenario } from './scenarios.ts';
import { tally, type Tally } from './tally.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One scenario's row of the chaos result (see run-chaos.ts's module comment for the fields). */
export interface ScenarioResult {
  scenario: string;
  answered: number;
  turns: number;
  distinct: number;
  duplicates: number;
  pairs: number;
  judgements: number;
  samples: number;
  clickhouse_rows: number;
  dead_lettered: number;
  lost: number;
  doubled: number;
  recover_s: number | null;
  p50_ms: number;
  p99_ms: number;
  /** p99 of the calls answered after the fault. */
  p99_after_fault_ms: number;
  seconds: number;
  lost_detail?: Record<string, number>;
  /** When doubled > 0: how many extra copies each count saw. */
  doubled_detail?: Record<string, number>;
  details: FaultDetails;
}

/** Runs scenario `sc` (reported as `name`) with `calls` calls, its sessions under `ctx.prefix`. */
export async function runScenario(
  name: string,
  sc: Scenario,
  ctx: FaultContext,
  calls: number,
  observer: Observer,
  say: (l: string) => void,
): Promise<ScenarioResult> {
  const t0 = Date.now();
  const fault = new FaultWindow(sc, ctx, observer);
  const load = await runConversations({
    url: ctx.gatewayUrls,
    affinity: ctx.affinity,
    prefix: ctx.prefix,
    calls,
    onAnswered: (n) => {
      if (n >= Math.floor(calls / 3)) fault.start();
    },
  });
  fault.start();
  const details = await fault.details();
  await fault.stop();
  const answered = new Map<string, CallResult>();
  for (const c of [...load.answered, ...fault.probes]) answered.set(c.turnId, c);
  const counts = await settle(ctx, observer, answered);
  if (counts.lost > 0) say(`  missing: ${JSON.stringify(counts.detail)} e.g. ${JSON.stringify(counts.examples)}`);
  if (counts.doubled > 0) say(`  doubled: ${JSON.stringify(counts.doubledDetail)} e.g. ${JSON.stringify(counts.doubledExamples)}`);
  return scenarioResult(name, t0, answered, counts, fault, { ...details, unanswered: load.unanswered, feedback: load.feedback });
}

/** Waits until every answered turn went all the way, or gives up and counts what is missing. */
async function settle(ctx: FaultContext, observer: Observer, answered: Map<string, CallResult>): Promise<Tally> {
  let counts = await tally(ctx, observer, answered);
  for (const deadline = Date.now() + 180_000; counts.lost > 0 && Date.now() < deadline; await sleep(2000))
    counts = await tally(ctx, observer, answered);
  await sleep(3000); // anything doubled shows up by now
  return tally(ctx, observer, answered);
}

function scenarioResult(
  name: string,
  t0: number,
  answered: Map<string, CallResult>,
  counts: Tally,
  fault: FaultWindow,
  details: FaultDetails,
): ScenarioResult {
  const ms = [...answered.values()].map((c) => c.ms).sort((a, b) => a - b);
  const after = [...answered.values()]
    .filter((c) => c.at >= fault.at)
    .map((c) => c.ms)
    .sort((a, b) => a - b);
  return {
    scenario: name,
    answered: answered.size,
    turns: counts.turns,
    distinct: counts.distinct,
    duplicates: counts.turns - counts.distinct,
    pairs: counts.pairs,
    judgements: counts.judgements,
    samples: counts.samples,
    clickhouse_rows: counts.clickhouse,
    dead_lettered: counts.dlq,
    lost: counts.lost,
    doubled: counts.doubled,
    recover_s: fault.recoverS,
    p50_ms: quantile(ms, 0.5),
    p99_ms: quantile(ms, 0.99),
    p99_after_fault_ms: quantile(after, 0.99),
    seconds: Math.round((Date.now() - t0) / 1000),
    ...(counts.lost > 0 ? { lost_detail: counts.detail } : {}),
    ...(counts.doubled > 0 ? { doubled_detail: counts.doubledDetail } : {}),
    details,
  };
}
