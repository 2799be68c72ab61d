/** What a replay's tagged topics hold, deduplicated by event id: counted from the topics or as the replay writes them. */
import type { Kafka } from 'kafkajs';
import type { DeadLetter, Judgement, Sample, TurnPair } from '../schemas/index.ts';
import { readToEnd, type EventCodecs } from '../streams/index.ts';
import type { ReplaySummary } from './replay-options.ts';

export type OutputCounts = Pick<ReplaySummary, 'pairs' | 'judgements' | 'samples' | 'deadLetters'>;

const bump = (m: Record<string, number>, k: string) => void (m[k] = (m[k] ?? 0) + 1);
const sum = (xs: Iterable<number>) => [...xs].reduce((a, b) => a + b, 0);

export class OutputTally {
  private readonly pairs = new Map<string, { end: string; next: boolean }>();
  private readonly judgements = new Map<string, { score: number; judgeId: string; votes: number; valid: number }>();
  private readonly samples = new Map<string, { method: string; reward: number; masked: boolean }>();
  private readonly dlq: Array<{ stage: string }> = [];

  pair(p: TurnPair): void {
    this.pairs.set(p.pairId, { end: p.endMarker ?? 'none', next: p.nextState.length > 0 });
  }
  judgement(j: Judgement): void {
    this.judgements.set(j.judgementId, {
      score: j.score,
      judgeId: j.judgeId,
      votes: j.votes.length,
      valid: j.votes.filter((v) => v.score !== null).length,
    });
  }
  sample(s: Sample): void {
    this.samples.set(s.sampleId, { method: s.method, reward: s.reward, masked: s.lossMask.every((m) => m === 0) });
  }
  deadLetter(d: Pick<DeadLetter, 'stage'>): void {
    this.dlq.push({ stage: d.stage });
  }

  counts(): OutputCounts {
    const { pairs, judgements, samples, dlq } = this;
    const byEnd: Record<string, number> = {};
    for (const p of pairs.values()) bump(byEnd, p.end);
    const byScore: Record<string, number> = { '-1': 0, '0': 0, '1': 0 };
    const judgeIds = new Set<string>();
    for (const j of judgements.values()) {
      bump(byScore, String(j.score));
      judgeIds.add(j.judgeId);
    }
    const byMethod: Record<string, number> = {};
    const byReward: Record<string, number> = { '-1': 0, '0': 0, '1': 0 };
    let masked = 0;
    for (const s of samples.values()) {
      bump(byMethod, s.method);
      bump(byReward, String(s.reward));
      if (s.masked) masked++;
    }
    const byStage: Record<string, number> = {};
    for (const d of dlq) bump(byStage, d.stage);
    return {
      pairs: { total: pairs.size, byEnd, withNextState: [...pairs.values()].filter((p) => p.next).length },
      judgements: {
        total: judgements.size,
        byScore,
        judgeIds: [...judgeIds].sort(),
        votes: sum([...judgements.values()].map((j) => j.valid)),
        withoutVotes: [...judgements.values()].filter((j) => j.votes === 0).length,
      },
      samples: { total: samples.size, byMethod, byReward, masked },
      deadLetters: { total: dlq.length, byStage },
    };
  }
}

/** What the tagged topics hold (deduplicated by event id). */
export async function summarize(kafka: Kafka, codecs: EventCodecs): Promise<OutputCounts> {
  const tally = new OutputTally();
  await Promise.all([
    readToEnd(kafka, codecs.topic('pairs'), async (r) => {
      if (r.value) tally.pair(await codecs.of('pairs').decode(r.value));
    }),
    readToEnd(kafka, codecs.topic('judgements'), async (r) => {
      if (r.value) tally.judgement(await codecs.of('judgements').decode(r.value));
    }),
    readToEnd(kafka, codecs.topic('samples'), async (r) => {
      if (r.value) tally.sample(await codecs.of('samples').decode(r.value));
    }),
    readToEnd(kafka, codecs.topic('dlq'), async (r) => {
      if (r.value) tally.deadLetter(await codecs.of('dlq').decode(r.value));
    }),
  ]);
  return tally.counts();
}
