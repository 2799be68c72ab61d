/**
 * The range of history a replay reads, resolved to offsets once and kept in a plan file so a
 * restarted replay (same tag) reads exactly the same range, and the starting offsets of the
 * replay's assembler group.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Admin } from 'kafkajs';
import { invalidInput } from '../core/index.ts';

/** A bound of the range: a time (ISO-8601), or offsets of the turns topic. */
export type Bound =
  { kind: 'time'; at: number; text: string } | { kind: 'offset'; all?: number; partitions: Record<number, number>; text: string };

/**
 * `--from`/`--to` syntax: an integer is an offset of every partition of the turns topic;
 * `P:O,P:O` gives per-partition offsets (partitions not named are read from their start / to
 * their end); anything else is a time (ISO-8601, e.g. `2026-02-14T20:00:00Z`).
 */
export function parseBound(text: string): Bound {
  const s = text.trim();
  if (/^\d+$/.test(s)) return { kind: 'offset', all: Number(s), partitions: {}, text: s };
  if (/^\d+:\d+(,\d+:\d+)*$/.test(s)) {
    const partitions: Record<number, number> = {};
    for (const part of s.split(',')) {
      const [p, o] = part.split(':').map(Number);
      partitions[p] = o;
    }
    return { kind: 'offset', partitions, text: s };
  }
  const at = Date.parse(s);
  if (!Number.isFinite(at)) throw new Error(`"${text}" is neither a time (ISO-8601) nor an offset (N or P:O,P:O)`);
  return { kind: 'time', at, text: s };
}

/** Per-partition offsets (as strings, Kafka's way). */
export type Offsets = Record<number, string>;

export interface TopicRange {
  topic: string;
  start: Offsets;
  /** Exclusive. */
  end: Offsets;
}

export interface ReplayPlan {
  version: 1;
  prefix: string;
  tag: string;
  from: string;
  to: string | null;
  createdAt: string;
  turns: TopicRange;
  feedback: TopicRange;
}

async function watermarks(admin: Admin, topic: string): Promise<Map<number, { low: bigint; high: bigint }>> {
  const list = await admin.fetchTopicOffsets(topic);
  return new Map(list.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
}

const clamp = (v: bigint, lo: bigint, hi: bigint) => (v < lo ? lo : v > hi ? hi : v);

async function resolve(admin: Admin, topic: string, bound: Bound | undefined, side: 'from' | 'to', isTurns: boolean): Promise<Offsets> {
  const wm = await watermarks(admin, topic);
  const out: Offsets = {};
  if (bound?.kind === 'time') {
    for (const { partition, offset } of await admin.fetchTopicOffsetsByTimestamp(topic, bound.at)) {
      const w = wm.get(partition)!;
      out[partition] = clamp(BigInt(offset), w.low, w.high).toString();
    }
    return out;
  }
  for (const [p, w] of wm) {
    const given = bound && isTurns ? (bound.partitions[p] ?? bound.all) : undefined;
    const dflt = side === 'from' ? w.low : w.high;
    out[p] = (given === undefined ? dflt : clamp(BigInt(given), w.low, w.high)).toString();
  }
  return out;
}

/**
 * Resolves `from`/`to` to offsets of the turns and feedback topics. A time bound is looked up by
 * record timestamp (the first record at or after it, in log order); an offset bound applies to the
 * turns topic, and the feedback topic is then read from its start (`from`) or to its current end
 * (`to`). No `to`: the current end of both topics.
 */
export async function resolvePlan(
  admin: Admin,
  o: { prefix: string; tag: string; turnsTopic: string; feedbackTopic: string; from: Bound; to?: Bound },
): Promise<ReplayPlan> {
  const range = async (topic: string, isTurns: boolean): Promise<TopicRange> => {
    const start = await resolve(admin, topic, o.from, 'from', isTurns);
    const end = await resolve(admin, topic, o.to, 'to', isTurns);
    for (const p of Object.keys(start)) if (BigInt(end[Number(p)]) < BigInt(start[Number(p)])) end[Number(p)] = start[Number(p)];
    return { topic, start, end };
  };
  return {
    version: 1,
    prefix: o.prefix,
    tag: o.tag,
    from: o.from.text,
    to: o.to?.text ?? null,
    createdAt: new Date().toISOString(),
    turns: await range(o.turnsTopic, true),
    feedback: await range(o.feedbackTopic, false),
  };
}

/**
 * The replay's plan: the one its tag already has (a resumed replay, which must ask for the same
 * range), else a new one resolved now and written before anything is read.
 */
export async function openPlan(
  admin: Admin,
  file: string,
  o: { prefix: string; tag: string; turnsTopic: string; feedbackTopic: string; from: Bound; to?: Bound },
): Promise<{ plan: ReplayPlan; resumed: boolean }> {
  const had = readPlan(file);
  if (had) {
    if (had.from !== o.from.text || had.to !== (o.to?.text ?? null))
      throw invalidInput(
        `replay "${o.tag}" was started with --from ${had.from}${had.to ? ` --to ${had.to}` : ''}; run it with the same range to resume, or use another tag`,
        '--from',
      );
    return { plan: had, resumed: true };
  }
  const plan = await resolvePlan(admin, o);
  writePlan(file, plan);
  return { plan, resumed: false };
}

export function readPlan(file: string): ReplayPlan | null {
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, 'utf8')) as ReplayPlan;
}

export function writePlan(file: string, plan: ReplayPlan): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, `${JSON.stringify(plan, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

/** A group's committed offsets of `topic` (-1 = none). */
export async function committedOffsets(admin: Admin, groupId: string, topic: string): Promise<Map<number, bigint>> {
  const res = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((res[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
}
