/**
 * What Avro costs the pipeline per turn: the backlog's own turns put through the pure cores
 * (assembler, embedded judge, sample builder) in memory, then each record the stages read decoded
 * and each record they write encoded, as the stages do it (`encodeNow`, `decodeNow` of the topic
 * family's codecs), timed per record type. Three
 * decodes (turn, pair, judgement) and four encodes (session state, pair, judgement, sample) a turn.
 */
import { applyTurn, buildSample, createEmbeddedJudge } from '../processors/index.ts';
import type { Codec, SessionState, TopicId, Turn } from '../schemas/index.ts';
import type { EventCodecs } from '../streams/index.ts';
import { median } from './support.ts';

export interface AvroCost {
  /** Records of each type made from the turns. */
  records: Partial<Record<TopicId, number>>;
  /** Mean encoded bytes by type. */
  bytes: Partial<Record<TopicId, number>>;
  /** Microseconds per record by type. */
  encode_us: Partial<Record<TopicId, number>>;
  decode_us: Partial<Record<TopicId, number>>;
  /** What the pipeline spends on Avro per turn: the decodes of turn, pair, judgement and the encodes of state, pair, judgement, sample. */
  us_per_turn: number;
}

const READ: TopicId[] = ['turns', 'pairs', 'judgements'];
const WRITTEN: TopicId[] = ['sessionState', 'pairs', 'judgements', 'samples'];

/** µs per item of `f`: a warm-up pass, then the median of `passes` timed passes (a collection in one pass moves a mean, not a median). */
function microsEach<T>(items: T[], passes: number, f: (x: T) => unknown): number {
  for (const x of items) f(x);
  const times: number[] = [];
  for (let p = 0; p < passes; p++) {
    const t = performance.now();
    for (const x of items) f(x);
    times.push(((performance.now() - t) * 1000) / items.length);
  }
  return median(times);
}

export async function avroCost(codecs: EventCodecs, turns: Turn[], graceMs: number, passes = 9): Promise<AvroCost> {
  const judge = createEmbeddedJudge();
  const made = new Map<TopicId, unknown[]>(['turns', 'sessionState', 'pairs', 'judgements', 'samples'].map((id) => [id as TopicId, []]));
  const states = new Map<string, SessionState>();
  for (const turn of turns) {
    made.get('turns')!.push(turn);
    const step = applyTurn(states.get(turn.sessionId), turn, { feedbackGraceMs: graceMs });
    states.set(turn.sessionId, step.state);
    made.get('sessionState')!.push(step.state);
    for (const pair of step.pairs) {
      made.get('pairs')!.push(pair);
      const judgement = await judge.judge(pair, {});
      made.get('judgements')!.push(judgement);
      const { sample } = await buildSample(judgement, { method: 'combined' }, {});
      if (sample) made.get('samples')!.push(sample);
    }
  }
  const out: AvroCost = { records: {}, bytes: {}, encode_us: {}, decode_us: {}, us_per_turn: 0 };
  const round = (x: number): number => Math.round(x * 10) / 10;
  for (const [id, values] of made) {
    if (values.length === 0) continue;
    const codec = codecs.of(id) as Codec<unknown>;
    const encoded = values.map((v) => codec.encodeNow(v));
    out.encode_us[id] = round(microsEach(values, passes, (v) => codec.encodeNow(v)));
    out.decode_us[id] = round(microsEach(encoded, passes, (b) => codec.decodeNow(b)));
    out.records[id] = values.length;
    out.bytes[id] = Math.round(encoded.reduce((n, b) => n + b.length, 0) / encoded.length);
  }
  const perTurn = (id: TopicId, us: Partial<Record<TopicId, number>>): number => (made.get(id)!.length / turns.length) * (us[id] ?? 0);
  out.us_per_turn = round(
    READ.reduce((n, id) => n + perTurn(id, out.decode_us), 0) + WRITTEN.reduce((n, id) => n + perTurn(id, out.encode_us), 0),
  );
  return out;
}
