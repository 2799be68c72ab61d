/**
 * Tracks the records of one partition that are being processed out of order and hands
 * back only the finished prefix, so offsets are committed in order and a record's outputs
 * are produced in the same transaction as its offset. Records handled together (a batch
 * handler's call) form a unit, which is never split over two transactions: the outputs of a
 * unit belong to all of its offsets.
 */
export interface TrackedEntry<O> {
  readonly offset: bigint;
  /** The last record of its unit (every record is a unit of its own unless added otherwise). */
  readonly unitEnd: boolean;
  done: boolean;
  outputs: O[];
}

export class OffsetTracker<O> {
  private readonly entries: TrackedEntry<O>[] = [];
  private readonly byOffset = new Map<bigint, TrackedEntry<O>>();
  /** The highest offset ever added: everything up to it is in flight or committed. */
  private highest = -1n;

  /** Records that arrived and are not committed yet. */
  get size(): number {
    return this.entries.length;
  }

  /** Whether anything can commit (the first record is finished). */
  get committable(): boolean {
    return this.entries[0]?.done === true;
  }

  /** @param unitEnd false while more records of the same unit follow. */
  add(offset: bigint, unitEnd = true): TrackedEntry<O> {
    const last = this.entries.at(-1);
    if (last && offset <= last.offset) throw new Error(`offset ${offset} added after ${last.offset}`);
    const entry: TrackedEntry<O> = { offset, unitEnd, done: false, outputs: [] };
    if (offset > this.highest) this.highest = offset;
    this.entries.push(entry);
    this.byOffset.set(offset, entry);
    return entry;
  }

  /**
   * Whether `offset` was added before, in flight or committed since. A consumer that rejoins its
   * group fetches again from the group's committed offsets, which a transaction still running
   * may be about to move past: what it fetches again must not be processed twice.
   */
  seen(offset: bigint): boolean {
    return offset <= this.highest;
  }

  complete(offset: bigint, outputs: O[]): void {
    const e = this.byOffset.get(offset);
    if (!e) return; // revoked meanwhile: the new owner re-processes it
    e.done = true;
    e.outputs = outputs;
  }

  /**
   * The finished prefix of whole units, `max` records at most (but always the first unit, however
   * large): its outputs in offset order and the next offset to commit.
   */
  peekCommittable(max = Number.POSITIVE_INFINITY): { count: number; nextOffset: bigint; outputs: O[] } | null {
    let count = 0;
    const outputs: O[] = [];
    let unit = 0;
    const unitOutputs: O[] = [];
    for (const e of this.entries) {
      if (!e.done) break;
      unit++;
      unitOutputs.push(...e.outputs);
      if (!e.unitEnd) continue;
      if (count > 0 && count + unit > max) break;
      count += unit;
      outputs.push(...unitOutputs);
      unit = 0;
      unitOutputs.length = 0;
      if (count >= max) break;
    }
    if (count === 0) return null;
    return { count, nextOffset: this.entries[count - 1].offset + 1n, outputs };
  }

  /** Forgets the first `count` entries once their transaction committed. */
  drop(count: number): void {
    for (const e of this.entries.splice(0, count)) this.byOffset.delete(e.offset);
  }
}
