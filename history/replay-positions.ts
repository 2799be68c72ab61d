/**
 * Where a replay stands in its range: the plan (resolved now, or the one an earlier run of the
 * same tag wrote) and the offsets the replay's group committed. A partition whose committed
 * offsets reached the range's end is done; any other is read again from the range's start, and
 * what precedes its committed position runs through the assembler without being emitted again.
 */
import type { Admin } from 'kafkajs';
import { committedOffsets, openPlan, type Bound, type ReplayPlan, type TopicRange } from './replay-range.ts';

/** Offsets of one partition in both topics of the range. */
export interface Position {
  turns: bigint;
  feedback: bigint;
}

const sum = (xs: Iterable<number>) => [...xs].reduce((a, b) => a + b, 0);
const bound = (r: TopicRange, p: number, side: 'start' | 'end') => (r[side][p] !== undefined ? BigInt(r[side][p]) : 0n);
const rangeSize = (r: TopicRange) => sum(Object.keys(r.start).map((p) => Number(BigInt(r.end[Number(p)]) - BigInt(r.start[Number(p)]))));

export class ReplayPositions {
  /** The partitions left to replay, in order. */
  readonly todo: number[];
  /** An earlier run committed something: the tagged topics hold more than this run writes. */
  readonly anyCommitted: boolean;
  /** Records of the range, per topic. */
  readonly inRange: { turns: number; feedback: number };

  constructor(
    readonly plan: ReplayPlan,
    private readonly committedTurns: Map<number, bigint>,
    private readonly committedFeedback: Map<number, bigint>,
  ) {
    const { turns, feedback } = plan;
    const partitions = [...new Set([...Object.keys(turns.start), ...Object.keys(feedback.start)].map(Number))].sort((a, b) => a - b);
    this.todo = partitions.filter((p) => !this.isDone(p));
    this.anyCommitted = [...committedTurns.values(), ...committedFeedback.values()].some((v) => v >= 0n);
    this.inRange = { turns: rangeSize(turns), feedback: rangeSize(feedback) };
  }

  /** Where partition `p` stands: what was committed, or the range's start when nothing (or less) was. */
  committed(p: number): Position {
    const at = (r: TopicRange, c: Map<number, bigint>) => {
      const v = c.get(p) ?? -1n;
      const start = bound(r, p, 'start');
      return v < start ? start : v;
    };
    return { turns: at(this.plan.turns, this.committedTurns), feedback: at(this.plan.feedback, this.committedFeedback) };
  }

  /** The range's end in partition `p` (exclusive). */
  end(p: number): Position {
    return { turns: bound(this.plan.turns, p, 'end'), feedback: bound(this.plan.feedback, p, 'end') };
  }

  /** Records of the range in partition `p`, both topics. */
  size(p: number): number {
    const { turns, feedback } = this.plan;
    return Number(bound(turns, p, 'end') - bound(turns, p, 'start') + bound(feedback, p, 'end') - bound(feedback, p, 'start'));
  }

  /** Records of the range in the partitions already done. */
  alreadyRead(): number {
    return this.inRange.turns + this.inRange.feedback - sum(this.todo.map((p) => this.size(p)));
  }

  /** What is left of one topic's range: its partitions not done. */
  left(r: TopicRange): TopicRange {
    return {
      topic: r.topic,
      start: Object.fromEntries(this.todo.filter((p) => r.start[p] !== undefined).map((p) => [p, r.start[p]])),
      end: Object.fromEntries(this.todo.filter((p) => r.end[p] !== undefined).map((p) => [p, r.end[p]])),
    };
  }

  private isDone(p: number): boolean {
    const at = this.committed(p);
    const end = this.end(p);
    return at.turns >= end.turns && at.feedback >= end.feedback;
  }
}

/** Opens the replay's plan (writing it when new) and reads its group's committed offsets. */
export async function openPositions(
  admin: Admin,
  planFile: string,
  groupId: string,
  o: { prefix: string; tag: string; turnsTopic: string; feedbackTopic: string; from: Bound; to?: Bound },
): Promise<{ positions: ReplayPositions; resumed: boolean }> {
  const { plan, resumed } = await openPlan(admin, planFile, o);
  const committedTurns = await committedOffsets(admin, groupId, plan.turns.topic);
  const committedFeedback = await committedOffsets(admin, groupId, plan.feedback.topic);
  return { positions: new ReplayPositions(plan, committedTurns, committedFeedback), resumed };
}
