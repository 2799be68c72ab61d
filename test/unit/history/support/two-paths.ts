/**
 * One history through both paths, without Kafka: the live service's work (StreamAssembler with
 * its StreamClock) under a seeded random schedule of fetched batches and punctuations, and the
 * batch replay's (assemblePartition) over the same partitions.
 */
import { assemblePartition, EventTimeAssembler, openaiChatParser, type HistoryEvent } from '../../../../history/index.ts';
import {
  resolveAssemblerOptions,
  StreamAssembler,
  StreamClock,
  type AssemblerRecord,
  type SessionAssemblerOptions,
} from '../../../../processors/session-assembler/index.ts';
import type { Feedback, SessionState, Turn, TurnPair } from '../../../../schemas/index.ts';
import { partitionOf, rng, type Written } from './generated-history.ts';

/** A record of a topic partition: its value and when it reached Kafka. */
export type Logged = { at: number } & ({ topicId: 'turns'; value: Turn } | { topicId: 'feedback'; value: Feedback });

/** The turns and feedback topics, by partition, each in offset order. */
export interface Topics {
  partitions: number;
  turns: Logged[][];
  feedback: Logged[][];
}

export function emptyTopics(partitions: number): Topics {
  return {
    partitions,
    turns: Array.from({ length: partitions }, () => []),
    feedback: Array.from({ length: partitions }, () => []),
  };
}

/** Appends records, each to its session's partition (the order given is the order written). */
export function write(topics: Topics, records: readonly Written[]): Topics {
  for (const w of records) topics[w.topicId][partitionOf(w.value.sessionId, topics.partitions)].push(w as Logged);
  return topics;
}

/**
 * What `turnstream import` writes for `lines` (openai-chat), flushed a few lines at a time from
 * `at` on: each line's turns, then its feedback, in the file's order.
 */
export function importLines(lines: readonly object[], at: number, seed: number): Written[] {
  const r = rng(seed ^ 0x5eed);
  const parse = openaiChatParser(() => at);
  const out: Written[] = [];
  let t = at;
  lines.forEach((line, i) => {
    if (i % (1 + Math.floor(r() * 12)) === 0) t += Math.floor(r() * 40); // the next flush
    const parsed = parse(line);
    for (const value of parsed.turns) out.push({ at: t, topicId: 'turns', value });
    for (const value of parsed.feedback) out.push({ at: t, topicId: 'feedback', value });
  });
  return out;
}

export interface LiveRun {
  pairs: TurnPair[];
  /** Punctuations that found the clock holding still for records read out of order. */
  heldPunctuations: number;
}

/**
 * The live service over `topics`: it fetches what has reached Kafka in batches of random size
 * (1 to `maxBatch` records, partition by partition, topic by topic, in random order), and its
 * punctuator runs every 50–1500 ms of wall time in between; after the last record, until `endAt`
 * and a little longer, so that everything closes and goes out.
 */
export function assembleLive(topics: Topics, options: SessionAssemblerOptions, seed: number, endAt: number, maxBatch = 40): LiveRun {
  const r = rng(seed ^ 0x11fe);
  const opts = resolveAssemblerOptions(options);
  const clock = new StreamClock(5000, 60_000, 1000);
  const live = new StreamAssembler(opts, clock);
  const store = new Map<string, SessionState>();
  const state = {
    get: (k: string) => store.get(k),
    put: (k: string, v: SessionState) => void store.set(k, v),
    delete: (k: string) => void store.delete(k),
    entries: () => store.entries(),
  };
  const pairs: TurnPair[] = [];
  const emit = (p: TurnPair) => void pairs.push(p);
  const sources = [
    ...topics.turns.map((records, p) => ({ topicId: 'turns' as const, p, records, read: 0 })),
    ...topics.feedback.map((records, p) => ({ topicId: 'feedback' as const, p, records, read: 0 })),
  ];
  const first = Math.min(...sources.flatMap((s) => s.records.map((x) => x.at)));
  let wall = first;
  let nextTick = wall + 50 + Math.floor(r() * 1450);
  let heldPunctuations = 0;
  const punctuate = () => {
    if (store.size > 0 && clock.now(wall) === Number.NEGATIVE_INFINITY) heldPunctuations++;
    live.punctuate(state, wall, emit);
    nextTick = wall + 50 + Math.floor(r() * 1450);
  };
  for (;;) {
    const unread = sources.filter((s) => s.read < s.records.length);
    if (unread.length === 0 && wall >= endAt) break;
    const visible = (s: (typeof sources)[number]) => {
      let v = s.read;
      while (v < s.records.length && s.records[v].at <= wall) v++;
      return v;
    };
    const ready = unread.filter((s) => visible(s) > s.read);
    if (ready.length === 0) {
      // Nothing to fetch: a punctuation while waiting (if one falls due), then the next record.
      const nextAt = unread.length > 0 ? Math.min(...unread.map((s) => s.records[s.read].at)) : endAt;
      if (nextTick < nextAt) {
        wall = Math.max(wall + 1, nextTick);
        punctuate();
      }
      wall = Math.max(wall + 1, nextAt);
    } else {
      for (const s of ready.sort(() => r() - 0.5)) {
        if (r() < 0.25) continue; // fetched a little later
        const high = visible(s);
        const n = Math.min(high - s.read, 1 + Math.floor(r() * maxBatch));
        const batch: AssemblerRecord[] = s.records.slice(s.read, s.read + n).map(
          (x, i) =>
            ({
              topicId: x.topicId,
              key: x.value.sessionId,
              partition: s.p,
              offset: String(s.read + i),
              lag: high - (s.read + i) - 1,
              value: x.value,
            }) as AssemblerRecord,
        );
        s.read += n;
        live.handleBatch(batch, state, wall, emit);
        wall += Math.floor(r() * 5);
      }
      wall += 1 + Math.floor(r() * 200);
    }
    if (wall >= nextTick) punctuate();
  }
  // Quiet and caught up: the wall clock closes and lets go what is left.
  for (let i = 0; i < 3; i++) {
    wall += 6000;
    punctuate();
  }
  return { pairs, heldPunctuations };
}

/** The batch replay's work over `topics`: each partition merged by event time, then its end at wall time `endAt`. */
export function assembleReplay(topics: Topics, options: SessionAssemblerOptions, endAt: number): TurnPair[] {
  const out: TurnPair[] = [];
  for (let p = 0; p < topics.partitions; p++) {
    const events = (list: Logged[]): HistoryEvent[] =>
      list.map((x, i) => ({ topicId: x.topicId, offset: BigInt(i), value: x.value }) as HistoryEvent);
    const asm = new EventTimeAssembler(options);
    for (const { pairs } of assemblePartition(asm, events(topics.turns[p]), events(topics.feedback[p]), () => endAt)) out.push(...pairs);
  }
  return out;
}

/** The latest event time of a history: a session left open by it is idle by this plus the idle timeout. */
export function lastEventTime(topics: Topics): number {
  let t = 0;
  for (const list of [...topics.turns, ...topics.feedback])
    for (const x of list) t = Math.max(t, x.topicId === 'turns' ? x.value.completedAt : x.value.createdAt);
  return t;
}

/** The differences between two sets of pairs, by pair id (empty when they are the same). */
export function differences(live: readonly TurnPair[], replay: readonly TurnPair[]): string[] {
  const out: string[] = [];
  const byId = (ps: readonly TurnPair[], name: string) => {
    const m = new Map<string, TurnPair>();
    for (const p of ps) {
      if (m.has(p.pairId)) out.push(`${name}: pair ${p.pairId} twice`);
      m.set(p.pairId, p);
    }
    return m;
  };
  const a = byId(live, 'live');
  const b = byId(replay, 'replay');
  for (const [id, p] of a) {
    const q = b.get(id);
    if (!q) out.push(`only live: ${describe(p)}`);
    else if (JSON.stringify(canonical(p)) !== JSON.stringify(canonical(q)))
      out.push(`differs: live ${describe(p)}\n  replay ${describe(q)}`);
  }
  for (const [id, q] of b) if (!a.has(id)) out.push(`only replay: ${describe(q)}`);
  return out;
}

/** A pair as compared: everything but the replay tag. */
const canonical = (p: TurnPair) => ({ ...p, tag: null });

const describe = (p: TurnPair): string =>
  `${p.pairId} (session ${p.sessionId} #${p.turn.mainTurnIndex}) end=${p.endMarker} next=${JSON.stringify(
    p.nextState.map((i) => `${i.role}:${i.content.slice(0, 24)}`),
  )} feedback=${p.feedback.map((f) => f.feedbackId).join(',')} user=${p.userId} verified=${p.historyVerified} at=${p.createdAt}`;
