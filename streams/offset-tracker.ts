/**
 * Tracks the records of one partition that are being processed out of order and hands
 * back only the finished prefix, so offsets are committed in order and a record's outputs
 * are produced in the same transaction as its offset.
 */
export interface TrackedEntry<O> {
  readonly offset: bigint;
  done: boolean;
  outputs: O[];
}

export class OffsetTracker<O> {
  private readonly entries: TrackedEntry<O>[] = [];
  private readonly byOffset = new Map<bigint, TrackedEntry<O>>();

  /** Records that arrived and are not committed yet. */
  get size(): number {
    return this.entries.length;
  }

  /** Whether anything can commit (the first record is finished). */
  get committable(): boolean {
    return this.entries[0]?.done === true;
  }

  add(offset: bigint): TrackedEntry<O> {
    const last = this.entries.at(-1);
    if (last && offset <= last.offset) throw new Error(`offset ${offset} added after ${last.offset}`);
    const entry: TrackedEntry<O> = { offset, done: false, outputs: [] };
    this.entries.push(entry);
    this.byOffset.set(offset, entry);
    return entry;
  }

  has(offset: bigint): boolean {
    return this.byOffset.has(offset);
  }

  complete(offset: bigint, outputs: O[]): void {
    const e = this.byOffset.get(offset);
    if (!e) return; // revoked meanwhile: the new owner re-processes it
    e.done = true;
    e.outputs = outputs;
  }

  /** The finished prefix (its first `max` records at most): its outputs in offset order and the next offset to commit. */
  peekCommittable(max = Number.POSITIVE_INFINITY): { count: number; nextOffset: bigint; outputs: O[] } | null {
    let count = 0;
    const outputs: O[] = [];
    for (const e of this.entries) {
      if (!e.done || count >= max) break;
      count++;
      outputs.push(...e.outputs);
    }
    if (count === 0) return null;
    return { count, nextOffset: this.entries[count - 1].offset + 1n, outputs };
  }

  /** Forgets the first `count` entries once their transaction committed. */
  drop(count: number): void {
    for (const e of this.entries.splice(0, count)) this.byOffset.delete(e.offset);
  }
}
