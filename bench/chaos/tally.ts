/**
 * What became of a scenario's answered calls, from what the observer saw: the records on each
 * topic and the rows in ClickHouse, which answered turns went missing on the way (lost) and which
 * ids came more than once where they must be once (doubled).
 */
import type { CallResult } from './load.ts';
import type { Observer } from './observe.ts';
import type { FaultContext } from './scenarios.ts';

/** A scenario's counts at one moment; see {@link tally}. */
export type Tally = Awaited<ReturnType<typeof tally>>;

/**
 * Counts the scenario's records (those under `ctx.prefix`) and checks them against `answered`.
 * Adds to `answered` the turns the gateway captured for calls it answered without the client
 * counting them (the oversized turn).
 */
export async function tally(ctx: FaultContext, observer: Observer, answered: Map<string, CallResult>) {
  const p = ctx.prefix;
  const turns = observer.of('turns', p);
  const turnIds = new Set(turns.map((t) => t.turnId));
  // Turns the gateway captured for answered calls, plus the oversized one (answered to its client too).
  for (const t of turns)
    if (t.truncation && !answered.has(t.turnId))
      answered.set(t.turnId, { turnId: t.turnId, sessionId: t.sessionId, ms: 0, at: 0, attempts: 1 });
  const pairs = observer.of('pairs', p);
  const pairIds = new Set(pairs.map((x) => x.pairId));
  const judgements = observer.of('judgements', p);
  const judged = new Set(judgements.map((j) => j.turnId));
  const judgementIds = new Set(judgements.map((j) => j.judgementId));
  const samples = observer.of('samples', p);
  const sampleIds = new Set(samples.map((s) => s.sampleId));
  const dlq = observer.of('dlq', p);
  const deadPairs = new Set<string>();
  for (const d of dlq) {
    if (d.topic !== ctx.codecs.topic('pairs') || !d.value) continue;
    const pair = await ctx.codecs
      .of('pairs')
      .decode(d.value)
      .catch(() => null);
    if (pair) deadPairs.add(pair.pairId);
  }
  const ch = await observer.clickhouseTurns(p);
  const ids = {
    turns_topic: [...answered.keys()].filter((id) => !turnIds.has(id)),
    clickhouse: [...answered.keys()].filter((id) => !ch.has(id)),
    pairs: [...new Set(turns.filter((t) => t.turnType === 'MAIN' && !pairIds.has(t.turnId)).map((t) => `${t.sessionId}/${t.turnId}`))],
    judgements: [...pairIds].filter((id) => !judged.has(id) && !deadPairs.has(id)),
  };
  const missing = Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, v.length])) as Record<keyof typeof ids, number>;
  const twice = {
    pairs: repeated(pairs.map((x) => x.pairId)),
    judgements: repeated(judgements.map((j) => j.judgementId)),
    samples: repeated(samples.map((s) => s.sampleId)),
    clickhouse: [...ch].filter(([, n]) => n > 1).map(([id]) => id),
  };
  const doubledBy = {
    pairs: pairs.length - pairIds.size,
    judgements: judgements.length - judgementIds.size,
    samples: samples.length - sampleIds.size,
    clickhouse: [...ch.values()].reduce((a, n) => a + n - 1, 0),
  };
  const doubled = Object.values(doubledBy).reduce((a, n) => a + n, 0);
  return {
    turns: turns.length,
    distinct: turnIds.size,
    pairs: pairIds.size,
    judgements: judgementIds.size,
    samples: sampleIds.size,
    clickhouse: ch.size,
    dlq: dlq.length,
    lost: missing.turns_topic + missing.clickhouse + missing.pairs + missing.judgements,
    doubled,
    detail: missing,
    doubledDetail: doubledBy,
    /** A few of the ids seen more than once, to look them up in the logs. */
    doubledExamples: Object.fromEntries(
      Object.entries(twice)
        .filter(([, v]) => v.length > 0)
        .map(([k, v]) => [k, v.slice(0, 3)]),
    ),
    /** A few of the missing ids, to look them up in the logs. */
    examples: Object.fromEntries(
      Object.entries(ids)
        .filter(([, v]) => v.length > 0)
        .map(([k, v]) => [k, v.slice(0, 3)]),
    ),
  };
}

/** The values that occur more than once in `ids`. */
function repeated(ids: string[]): string[] {
  const seen = new Set<string>();
  return [...new Set(ids.filter((id) => seen.has(id) || !seen.add(id)))];
}
